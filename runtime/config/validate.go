package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// unmarshalerType is json.Unmarshaler: a type that reads its own shape.
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkSettings walks ship.json (as parsed, before "${VAR}" expansion)
// against Config's json tags and refuses, with one line naming the
// setting, its section, the nearest known name and where it is
// documented:
//   - a setting Config does not have (encoding/json alone says only
//     `json: unknown field "capcity"`, with no section and no hint);
//   - a negative number for a whole-number setting: every count, size and
//     timeout of ship.json is 0 (the default) or more, and the defaults
//     would otherwise silently replace it.
//
// Type mismatches are left to the decoder, which names them.
func checkSettings(tree any) error {
	return walkSettings(tree, reflect.TypeFor[Config](), "")
}

func walkSettings(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		// A type with its own UnmarshalJSON may take keys that are no
		// field (tools: the policy's roles): check only the fields it has.
		own := reflect.PointerTo(t).Implements(unmarshalerType)
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			ft, ok := fieldType(fields, k)
			if !ok {
				if own {
					continue
				}
				return unknownSetting(path, k, fields)
			}
			if err := walkSettings(m[k], ft, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if err := walkSettings(m[k], t.Elem(), join(path, k)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if a, ok := v.([]any); ok {
			for i, x := range a {
				if err := walkSettings(x, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := v.(float64); ok && n < 0 {
			return fmt.Errorf("%w: %s: %s is %v; it cannot be negative: use 0 or more, or leave it out for the default (see %s)",
				ErrInvalid, FileName, path, n, docsFor(path))
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields (embedded structs'
// promoted fields included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fieldType finds key as encoding/json does: the exact name first, then
// one that differs only in case.
func fieldType(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

func unknownSetting(path, key string, fields map[string]reflect.Type) error {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	where, what := path+": ", "field"
	if path == "" {
		where, what = "", "section"
	}
	hint := ""
	if near := nearest(key, names); near != "" {
		hint = fmt.Sprintf(" — did you mean %q?", near)
	} else if len(names) > 0 {
		hint = " — known: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%w: %s: %sunknown %s %q%s (see %s)", ErrInvalid, FileName, where, what, key, hint, docsFor(path))
}

// nearest is the known name closest to key by edit distance (ignoring
// case), if it is close enough to be a typo: 1 edit for names of up to 3
// letters, 2 up to 8, else 3.
func nearest(key string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(strings.ToLower(key), strings.ToLower(n))
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	limit := 3
	switch n := max(len(key), len(best)); {
	case n <= 3:
		limit = 1
	case n <= 8:
		limit = 2
	}
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b
// in bytes (setting names are ASCII): insertions, deletions, changes and
// swaps of two neighbours ("modle" is one edit from "model").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// sectionDocs is where each top-level section of ship.json is documented
// (docs/configuration.md's "Where the other settings are").
var sectionDocs = map[string]string{
	"llm":      "docs/configuration.md#configuration",
	"stt":      "docs/models.md#images-and-voice",
	"files":    "docs/models.md#images-and-voice",
	"server":   "docs/api.md#http-api",
	"adapters": "docs/platforms.md#platforms",
	"queue":    "docs/configuration.md#configuration",
	"store":    "docs/configuration.md#configuration",
	"history":  "docs/memory.md#summaries-instead-of-forgetting",
	"memory":   "docs/memory.md#notes",
	"limits":   "docs/memory.md#token-accounting-and-budgets",
	"tools":    "docs/tools.md#tools-and-permissions",
	"agents":   "docs/jobs.md#agent-profiles",
	"mcp":      "docs/extensions.md#mcp-servers",
	"skills":   "docs/extensions.md#skills",
	"cluster":  "docs/cluster.md#running-as-a-cluster-nats-jetstream",
	"log":      "docs/operations.md#logs",
	"metrics":  "docs/metrics.md#scraping",
	"shutdown": "docs/drain.md#graceful-drain",
}

// docsFor says where a setting is documented: its top-level section's
// page, or the list of sections for one that is not known.
func docsFor(path string) string {
	top, _, _ := strings.Cut(path, ".")
	top, _, _ = strings.Cut(top, "[")
	if doc, ok := sectionDocs[strings.ToLower(top)]; ok {
		return doc
	}
	return "docs/configuration.md#where-the-other-settings-are"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
