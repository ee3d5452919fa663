package probes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Negative is an input that breaks one rule of a tool's input schema.
type Negative struct {
	// Violation says which rule it breaks, in words.
	Violation string
	Arguments json.RawMessage
}

// Negatives derives, from a valid input, inputs that each violate the
// schema in one way: a required property dropped, a property of the wrong
// type, outside its enum, below its minimum or above its maximum, longer
// than maxLength, or an extra property where additionalProperties is
// false. Each is checked to be rejected by the schema; candidates the
// schema would accept are left out.
func Negatives(schema, valid json.RawMessage) []Negative {
	root, err := decodeSchema(schema)
	if err != nil {
		return nil
	}
	v, err := compile(schema)
	if err != nil {
		return nil
	}
	var base map[string]any
	if json.Unmarshal(valid, &base) != nil {
		return nil
	}
	props, _ := root["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Negative
	add := func(violation string, args map[string]any) {
		b, err := json.Marshal(args)
		if err != nil || validate(v, b) == nil {
			return // not a violation after all
		}
		out = append(out, Negative{Violation: violation, Arguments: b})
	}
	with := func(k string, val any) map[string]any {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		m[k] = val
		return m
	}
	if req, ok := root["required"].([]any); ok {
		for _, r := range req {
			n, _ := r.(string)
			if _, present := base[n]; !present {
				continue
			}
			m := with(n, nil)
			delete(m, n)
			add(fmt.Sprintf("required property %q dropped", n), m)
		}
	}
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		if ps == nil {
			continue
		}
		switch t := typeOf(ps); t {
		case "string":
			add(fmt.Sprintf("property %q of the wrong type (a number, not a string)", n), with(n, 12345))
		case "integer", "number", "boolean":
			add(fmt.Sprintf("property %q of the wrong type (a string, not %s)", n, article(t)), with(n, "not-a-"+t))
		case "array", "object":
			add(fmt.Sprintf("property %q of the wrong type (a string, not %s)", n, article(t)), with(n, "not-an-"+t))
		}
		if e, ok := ps["enum"].([]any); ok && len(e) > 0 {
			add(fmt.Sprintf("property %q outside its enum", n), with(n, "mcpsandbox-not-in-enum"))
		}
		if lo, ok := num(ps["minimum"]); ok {
			add(fmt.Sprintf("property %q below its minimum %v", n, lo), with(n, lo-1))
		}
		if hi, ok := num(ps["maximum"]); ok {
			add(fmt.Sprintf("property %q above its maximum %v", n, hi), with(n, hi+1))
		}
		if ml, ok := num(ps["maxLength"]); ok && ml < 1<<16 {
			add(fmt.Sprintf("property %q longer than its maxLength %v", n, ml), with(n, strings.Repeat("x", int(ml)+1)))
		}
	}
	if ap, ok := root["additionalProperties"].(bool); ok && !ap {
		add("an extra property where additionalProperties is false", with("mcpsandbox_extra", "x"))
	}
	return out
}

func article(t string) string {
	if strings.IndexAny(t[:1], "aeiou") == 0 {
		return "an " + t
	}
	return "a " + t
}
