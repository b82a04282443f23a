package metrics

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Linux reports CPU time in clock ticks of 1/100 s (USER_HZ; proc(5),
// /proc/pid/stat: utime, stime "measured in clock ticks (divide by
// sysconf(_SC_CLK_TCK))", which is 100 on every Linux ship runs on).
const clockTicks = 100

// process registers the process and Go basics the client library's
// collectors call process_* and go_*, under the same names so existing
// dashboards work. Each is read at scrape time; where /proc is missing
// (not Linux) those lines are left out.
func (s *Set) process() {
	s.register("process_cpu_seconds_total", func(w *bufio.Writer) {
		if cpu, ok := cpuSeconds(); ok {
			writeHeader(w, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter")
			writeSample(w, "process_cpu_seconds_total", nil, nil, "", "", cpu)
		}
	})
	s.register("process_resident_memory_bytes", func(w *bufio.Writer) {
		if rss, ok := residentBytes(); ok {
			writeHeader(w, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge")
			writeSample(w, "process_resident_memory_bytes", nil, nil, "", "", rss)
		}
	})
	s.register("process_open_fds", func(w *bufio.Writer) {
		if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
			writeHeader(w, "process_open_fds", "Number of open file descriptors.", "gauge")
			writeSample(w, "process_open_fds", nil, nil, "", "", float64(len(fds)))
		}
	})
	start := float64(s.start.UnixNano()) / 1e9
	s.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", func() float64 { return start })
	s.gauge("go_goroutines", "Number of goroutines that currently exist.", func() float64 { return float64(runtime.NumGoroutine()) })
	s.gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", func() float64 {
		// ReadMemStats stops the world for a moment, once per scrape;
		// runtime/metrics would not, but linking it costs idle memory
		// at every start.
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	})
}

// cpuSeconds reads utime and stime from /proc/self/stat (fields 14 and
// 15; the command name in field 2 may hold spaces, so fields are counted
// after its closing parenthesis).
func cpuSeconds() (float64, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// After ")": state is field 3, so utime (14) is f[11], stime f[12].
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (ut + st) / clockTicks, true
}

// residentBytes reads the resident set from /proc/self/statm (its second
// field, in pages).
func residentBytes() (float64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return 0, false
	}
	return pages * float64(os.Getpagesize()), true
}
