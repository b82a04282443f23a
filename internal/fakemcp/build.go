package fakemcp

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// Build compiles the stdio fake (cmd/fakemcp) into dir and returns the
// binary's path. It needs the go command, as tests have.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "fakemcp")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shipmyagent/ship/internal/fakemcp/cmd/fakemcp").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building fakemcp: %w: %s", err, out)
	}
	return bin, nil
}
