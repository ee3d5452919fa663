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
	// (not next to a letter or digit): for names drawn from a
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

// RedactJSON replaces the placeholders' values in JSON text (or in the
// bytes of a frame that is not UTF-8): as RawMessage fields are.
func RedactJSON(s string, ps []Placeholder) string { return redactRaw(s, prepare(ps)) }

// RedactString replaces the placeholders' values in s.
func RedactString(s string, ps []Placeholder) string { return redactString(s, prepare(ps)) }

// prepare drops empty values and puts longer values first.
func prepare(ps []Placeholder) []Placeholder {
	ps = nonEmpty(slices.Clone(ps))
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].Value) > len(ps[j].Value) })
	return ps
}

func redactString(s string, ps []Placeholder) string { return redactAll(s, ps, false) }

// redactRaw is RedactString over JSON text: a word may follow an escape
// such as \n.
func redactRaw(s string, ps []Placeholder) string { return redactAll(s, ps, true) }

// redactAll replaces the values as they are first, so that each encoding
// keeps its role ("<x:HEX>" for upper-case hex), then in any ASCII case:
// the scan finds a value whatever its case (a DNS name is lower-cased on
// the way), so the report must not show it in any.
func redactAll(s string, ps []Placeholder, raw bool) string {
	for _, p := range ps {
		s = replace(s, p, raw, false)
	}
	lower := asciiLower(s) // once, not once per placeholder
	for _, p := range ps {
		if strings.Contains(lower, asciiLower(p.Value)) {
			s = replace(s, p, raw, true)
			lower = asciiLower(s)
		}
	}
	return s
}

func replace(s string, p Placeholder, raw, fold bool) string {
	if p.Value == "" {
		return s
	}
	value, hay := p.Value, s
	if fold {
		value, hay = asciiLower(value), asciiLower(s)
	}
	if !strings.Contains(hay, value) {
		return s
	}
	var b strings.Builder
	for {
		// hay is s, or s lower-cased byte for byte: indices are the same.
		i := strings.Index(hay, value)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(value)
		before := i == 0 || !wordByte(s[i-1]) || (raw && i >= 2 && s[i-2] == '\\' && !escaped(s[:i-2])) ||
			(raw && i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && !escaped(s[:i-6]))
		after := end == len(s) || !wordByte(s[end])
		b.WriteString(s[:i])
		if !p.Word || (before && after) {
			b.WriteString(p.Role)
		} else {
			b.WriteString(s[i:end])
		}
		s, hay = s[end:], hay[end:]
	}
}

// asciiLower lower-cases ASCII letters only, byte for byte (invalid
// UTF-8 included), so that offsets stay.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
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

// wordByte says whether c would make a name part of a longer word: a
// letter or a digit. "-" and "_" join names ("leak-core-ledger-api.txt")
// without making them another word.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
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

// Roles are names as the report's roles ("<github-token>"), once each,
// sorted.
func Roles(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, "<"+n+">")
	}
	slices.Sort(out)
	return slices.Compact(out)
}
