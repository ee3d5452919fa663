package k8sjob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// toYAML turns JSON into block-style YAML, keeping the order of object
// keys (the order of the Go structs, so the output is stable). Strings
// stay JSON-quoted, which YAML reads as the same double-quoted scalars:
// no value is ever taken for a number, a boolean or null.
func toYAML(js []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	emit(&b, v, 0)
	return []byte(b.String()), nil
}

// member is one key of an object, in order.
type member struct {
	key string
	val any
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := []member{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{k.(string), v})
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// plainKey is a key YAML reads as itself unquoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-/]*$`)

func key(k string) string {
	if plainKey.MatchString(k) && !isYAMLWord(k) {
		return k
	}
	q, _ := json.Marshal(k)
	return string(q)
}

// isYAMLWord is a key YAML 1.1 readers would take for a boolean or null.
func isYAMLWord(k string) bool {
	switch strings.ToLower(k) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}

func scalar(v any) string {
	switch t := v.(type) {
	case string:
		q, _ := json.Marshal(t)
		return string(q)
	case json.Number:
		return t.String()
	case bool:
		if t {
			return "true"
		}
		return "false"
	case nil:
		return "null"
	case []member:
		if len(t) == 0 {
			return "{}"
		}
	case []any:
		if len(t) == 0 {
			return "[]"
		}
	}
	return ""
}

// emit writes v, a value in a block at the given indent.
func emit(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat("  ", indent)
	switch t := v.(type) {
	case []member:
		for _, m := range t {
			b.WriteString(pad + key(m.key) + ":")
			emitValue(b, m.val, indent)
		}
	case []any:
		for _, e := range t {
			b.WriteString(pad + "-")
			if obj, ok := e.([]member); ok && len(obj) > 0 {
				// The first key on the dash's line, the rest under it.
				var sub strings.Builder
				emit(&sub, obj, indent+1)
				b.WriteString(" " + strings.TrimPrefix(sub.String(), pad+"  "))
				continue
			}
			emitValue(b, e, indent)
		}
	default:
		b.WriteString(pad + scalar(v) + "\n")
	}
}

// emitValue writes what follows a key's colon or a dash.
func emitValue(b *strings.Builder, v any, indent int) {
	if s := scalar(v); s != "" {
		b.WriteString(" " + s + "\n")
		return
	}
	b.WriteString("\n")
	emit(b, v, indent+1)
}
