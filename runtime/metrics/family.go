package metrics

import (
	"bufio"
	"math"
	"sort"
	"strconv"
	"sync"
)

// maxLabels is the most labels one family of ship's has; series are kept
// by an array of values, so finding one allocates nothing.
const maxLabels = 3

type labelValues [maxLabels]string

// family is one metric family: a counter or a histogram, with series by
// label values. The text it writes is the Prometheus text exposition
// format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats: "#
// HELP" and "# TYPE" lines, then one line per sample; histograms as
// cumulative _bucket{le=…} samples, _sum and _count).
type family struct {
	name, help, kind string // kind: counter | histogram
	labels           []string
	buckets          []float64 // histograms: upper bounds, ascending

	mu     sync.Mutex
	series map[labelValues]*series
}

// series is one label combination's value(s).
type series struct {
	value  float64  // counters
	counts []uint64 // histograms: observations per bucket (not cumulative)
	sum    float64
	count  uint64
}

func newFamily(name, help, kind string, buckets []float64, labels ...string) *family {
	if len(labels) > maxLabels {
		panic("metrics: " + name + " has more labels than maxLabels")
	}
	return &family{name: name, help: help, kind: kind, labels: labels, buckets: buckets, series: map[labelValues]*series{}}
}

// get returns the series of vals, made on first use; f.mu is held.
func (f *family) get(vals labelValues) *series {
	s := f.series[vals]
	if s == nil {
		s = &series{}
		if f.kind == "histogram" {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[vals] = s
	}
	return s
}

// add adds v to a counter's series.
func (f *family) add(v float64, vals ...string) {
	key := keyOf(vals)
	f.mu.Lock()
	f.get(key).value += v
	f.mu.Unlock()
}

// observe records one observation in a histogram's series.
func (f *family) observe(v float64, vals ...string) {
	key := keyOf(vals)
	f.mu.Lock()
	s := f.get(key)
	// The first bucket whose upper bound holds v; past the last it is
	// counted only in +Inf (count).
	if i := sort.SearchFloat64s(f.buckets, v); i < len(s.counts) {
		s.counts[i]++
	}
	s.sum += v
	s.count++
	f.mu.Unlock()
}

func keyOf(vals []string) labelValues {
	var k labelValues
	copy(k[:], vals)
	return k
}

// write writes the family in the text format, its series sorted by label
// values so scrapes compare line by line.
func (f *family) write(w *bufio.Writer) {
	writeHeader(w, f.name, f.help, f.kind)
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]labelValues, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		for i := range keys[a] {
			if keys[a][i] != keys[b][i] {
				return keys[a][i] < keys[b][i]
			}
		}
		return false
	})
	for _, k := range keys {
		s := f.series[k]
		if f.kind != "histogram" {
			writeSample(w, f.name, f.labels, k[:len(f.labels)], "", "", s.value)
			continue
		}
		var cum uint64
		for i, le := range f.buckets {
			cum += s.counts[i]
			writeSample(w, f.name+"_bucket", f.labels, k[:len(f.labels)], "le", formatFloat(le), float64(cum))
		}
		writeSample(w, f.name+"_bucket", f.labels, k[:len(f.labels)], "le", "+Inf", float64(s.count))
		writeSample(w, f.name+"_sum", f.labels, k[:len(f.labels)], "", "", s.sum)
		writeSample(w, f.name+"_count", f.labels, k[:len(f.labels)], "", "", float64(s.count))
	}
}

// writeHeader writes the # HELP and # TYPE lines; HELP escapes "\" and
// line feeds, as the format requires.
func writeHeader(w *bufio.Writer, name, help, kind string) {
	w.WriteString("# HELP " + name + " ")
	writeEscaped(w, help, false)
	w.WriteString("\n# TYPE " + name + " " + kind + "\n")
}

// writeEscaped writes s with "\" and line feeds escaped, and with quote
// the double quote too (a label value's rules; HELP keeps quotes).
func writeEscaped(w *bufio.Writer, s string, quote bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			w.WriteString(`\\`)
		case c == '\n':
			w.WriteString(`\n`)
		case c == '"' && quote:
			w.WriteString(`\"`)
		default:
			w.WriteByte(c)
		}
	}
}

// writeSample writes one sample line; extra (le) follows the labels.
func writeSample(w *bufio.Writer, name string, labels, vals []string, extra, extraVal string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l + `="`)
			writeEscaped(w, vals[i], true)
			w.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extra + `="` + extraVal + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// formatFloat writes a value as the format spells it (+Inf, -Inf, NaN
// included).
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
