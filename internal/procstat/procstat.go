// Package procstat reads a process's memory figures from /proc (Linux),
// for the benchmark programs.
package procstat

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory returns the resident set size and its peak (VmRSS, VmHWM) of the
// process pid in bytes; pid 0 means this process.
func Memory(pid int) (rss, peak int64, err error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	f, err := os.Open(filepath.Join("/proc", who, "status"))
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory figures: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s %q: %w", name, value, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("reading memory figures: %w", err)
	}
	if rss == 0 || peak == 0 {
		return 0, 0, errors.New("VmRSS or VmHWM missing from /proc status")
	}
	return rss, peak, nil
}
