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
	"time"
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

// CPUTime returns the CPU time (user and system, all threads) the process
// pid has used so far; pid 0 means this process.
func CPUTime(pid int) (time.Duration, error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	b, err := os.ReadFile(filepath.Join("/proc", who, "stat"))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("CPU time: /proc stat without a command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("CPU time: /proc stat too short")
	}
	// utime and stime are fields 14 and 15 of the line, in clock ticks
	// (100 a second on Linux).
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time: parsing %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
