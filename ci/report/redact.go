package report

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Placeholder pairs a value drawn for one run (a canary name, a
// honeytoken, the hash of a planted file) with the stable name of its
// role that the report shows instead, so that runs with different bait
// give the same report.
type Placeholder struct {
	Value string
	Role  string // shown as is, e.g. "<project>"
	// Word replaces the value only where it stands as a word of its own
	// (not next to a letter, digit, '_' or '-'): for names drawn from a
	// vocabulary, which ordinary text could contain inside a longer word.
	// Random values are replaced wherever they occur.
	Word bool
}

// Redact replaces each placeholder's value by its role in every string of
// the report outside Timing: paths, arguments, results, stderr, evidence.
// Longer values go first, so that a value inside another is not cut.
func (r *Report) Redact(ps []Placeholder) {
	ps = prepare(ps)
	if len(ps) == 0 {
		return
	}
	timing := r.Timing
	r.Timing = nil
	redactValue(reflect.ValueOf(r).Elem(), ps)
	r.Timing = timing
}

var rawType = reflect.TypeOf(json.RawMessage(nil))

func redactValue(v reflect.Value, ps []Placeholder) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			redactValue(v.Elem(), ps)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				redactValue(v.Field(i), ps)
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			if !v.IsNil() {
				v.SetBytes([]byte(redactRaw(string(v.Bytes()), ps)))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			redactValue(v.Index(i), ps)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(redactString(v.String(), ps))
		}
	}
}

// RedactString replaces the placeholders' values in s.
func RedactString(s string, ps []Placeholder) string { return redactString(s, prepare(ps)) }

// prepare drops empty values and puts longer values first.
func prepare(ps []Placeholder) []Placeholder {
	ps = nonEmpty(slices.Clone(ps))
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].Value) > len(ps[j].Value) })
	return ps
}

func redactString(s string, ps []Placeholder) string {
	for _, p := range ps {
		s = replace(s, p, false)
	}
	return s
}

// redactRaw is RedactString over JSON text: a word may follow an escape
// such as \n.
func redactRaw(s string, ps []Placeholder) string {
	for _, p := range ps {
		s = replace(s, p, true)
	}
	return s
}

func replace(s string, p Placeholder, raw bool) string {
	if p.Value == "" || !strings.Contains(s, p.Value) {
		return s
	}
	if !p.Word {
		return strings.ReplaceAll(s, p.Value, p.Role)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, p.Value)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(p.Value)
		before := i == 0 || !wordByte(s[i-1]) || (raw && i >= 2 && s[i-2] == '\\' && !escaped(s[:i-2]))
		after := end == len(s) || !wordByte(s[end])
		b.WriteString(s[:i])
		if before && after {
			b.WriteString(p.Role)
		} else {
			b.WriteString(p.Value)
		}
		s = s[end:]
	}
}

// escaped says whether s ends in an odd run of backslashes (the next byte
// is escaped).
func escaped(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func nonEmpty(ps []Placeholder) []Placeholder {
	out := ps[:0]
	for _, p := range ps {
		if p.Value != "" {
			out = append(out, p)
		}
	}
	return out
}
