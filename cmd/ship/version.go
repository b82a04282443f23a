package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// commit and buildTime are set at build time where the source has no git
// metadata (the container build copies no .git):
// -ldflags "-X main.commit=<sha> -X main.buildTime=<RFC 3339>". When they
// are empty, the VCS stamp Go writes into the binary is used.
var (
	commit    string
	buildTime string
)

// sdkModules are the modules a support question needs first: the
// platforms', the model client's, MCP's and the cluster's.
func sdkModules() []string {
	return []string{
		"github.com/go-telegram-bot-api/telegram-bot-api/v5",
		"github.com/larksuite/oapi-sdk-go/v3",
		"github.com/tencent-connect/botgo",
		"github.com/tmc/langchaingo",
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/nats-io/nats.go",
		"github.com/nats-io/nats-server/v2",
	}
}

// versionInfo is what `ship version` prints.
type versionInfo struct {
	Version string `json:"version"`
	// Commit is the source revision ("" when unknown); Modified says the
	// working tree had uncommitted changes when it was built.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified"`
	// BuildTime is when the binary was built (ldflags), else the commit's
	// time from the VCS stamp.
	BuildTime string `json:"buildTime,omitempty"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
	// Modules are the SDKs' versions as linked, by module path.
	Modules []moduleVersion `json:"modules"`
}

type moduleVersion struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// newVersionInfo gathers the build's facts: the ldflags values win over
// the VCS stamp in bi (nil when the binary carries no build info).
func newVersionInfo(bi *debug.BuildInfo, version, commit, buildTime string) versionInfo {
	v := versionInfo{Version: version, Commit: commit, BuildTime: buildTime, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if c, ok := strings.CutSuffix(commit, "-dirty"); ok {
		v.Commit, v.Modified = c, true
	}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	vcsTime := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				v.Commit = s.Value
			}
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			if commit == "" {
				v.Modified, _ = strconv.ParseBool(s.Value)
			}
		}
	}
	if v.BuildTime == "" {
		v.BuildTime = vcsTime
	}
	deps := make(map[string]string, len(bi.Deps))
	for _, d := range bi.Deps {
		if d.Replace != nil {
			deps[d.Path] = d.Replace.Version + " (replaced by " + d.Replace.Path + ")"
			continue
		}
		deps[d.Path] = d.Version
	}
	for _, path := range sdkModules() {
		if ver, ok := deps[path]; ok {
			v.Modules = append(v.Modules, moduleVersion{Path: path, Version: ver})
		}
	}
	return v
}

// print writes v for people: the first line is "ship <version>", as
// scripts that read only it expect.
func (v versionInfo) print(w io.Writer) {
	fmt.Fprintf(w, "ship %s\n", v.Version)
	rev := v.Commit
	switch {
	case rev == "":
		rev = "unknown (built without git metadata)"
	case v.Modified:
		rev += " (with uncommitted changes)"
	}
	fmt.Fprintf(w, "  commit   %s\n", rev)
	if v.BuildTime != "" {
		fmt.Fprintf(w, "  built    %s\n", v.BuildTime)
	}
	fmt.Fprintf(w, "  go       %s %s\n", v.Go, v.Platform)
	for _, m := range v.Modules {
		fmt.Fprintf(w, "  %s %s\n", m.Path, m.Version)
	}
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print ship's version, commit, Go version and SDK versions",
		Long: `version prints the release, the source commit (and whether it had uncommitted changes), when
it was built, the Go version and platform, and the versions of the platform SDKs linked in: what
a bug report needs. --json prints the same as one JSON object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo() // nil when the binary has none
			v := newVersionInfo(bi, version, commit, buildTime)
			if !asJSON {
				v.print(cmd.OutOrStdout())
				return nil
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("writing the version: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
