package probes

import (
	"encoding/json"
	"regexp"
	"slices"
)

// learn.go reads, for a tool whose published input schema names no
// property ({} or {"type": "object"}), the properties its error asks
// for: a server that validates in its handler names what is missing
// (zod's issues, pydantic's errors, "query is required"), and a call
// with those properties runs the tool.

var (
	// zod's issues: {"path": ["query"], ...}; pydantic's: "loc": ["query"]
	// or ('query',).
	issuePathRE = regexp.MustCompile(`"(?:path|loc)"\s*:\s*\[\s*"([A-Za-z_][A-Za-z0-9_]*)"`)
	pydanticRE  = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*\n\s+(?:Field required|field required|Missing required)`)
	// "query is required", "'query' is a required property", "query must
	// be", "Missing required parameter(s): a, b".
	isRequiredRE  = regexp.MustCompile(`['"\x60]?\b([A-Za-z_][A-Za-z0-9_]*)\b['"\x60]?\s+(?:is (?:a )?required|must be (?:provided|specified|given|a|an)\b|is missing\b)`)
	missingListRE = regexp.MustCompile(`(?i)\bmissing (?:required )?(?:parameters?|arguments?|fields?|properties|property|keys?|inputs?)\s*:?\s*((?:['"\x60]?[A-Za-z_][A-Za-z0-9_]*['"\x60]?(?:\s*,\s*|\s+and\s+)?)+)`)
)

// notFieldWords are words the patterns could take for a field name.
var notFieldWords = map[string]bool{"it": true, "this": true, "that": true, "value": true, "field": true, "argument": true, "parameter": true,
	"input": true, "property": true, "type": true, "and": true, "or": true, "the": true, "a": true, "an": true, "Error": true, "error": true}

// maxLearned bounds the properties learnt from one error.
const maxLearned = 8

// LearnedFields are the property names an error asks for, in the order
// it names them.
func LearnedFields(errText string) []string {
	errText = clip(errText, maxErrorText)
	var out []string
	add := func(n string) {
		if !notFieldWords[n] && !slices.Contains(out, n) && len(out) < maxLearned {
			out = append(out, n)
		}
	}
	for _, re := range []*regexp.Regexp{issuePathRE, pydanticRE, isRequiredRE} {
		for _, m := range re.FindAllStringSubmatch(errText, -1) {
			add(m[1])
		}
	}
	for _, m := range missingListRE.FindAllStringSubmatch(errText, -1) {
		for _, w := range identWord.FindAllString(m[1], -1) {
			add(w)
		}
	}
	return out
}

// LearnIn is, for a tool whose schema names no property, args with the
// properties its error asks for, each a string of the value the
// synthesizer gives its name (a path the canary's file, a URL the
// sinkhole's, a query a word); false when the schema names properties
// (RepairIn's), or the error names none args lacks.
func LearnIn(c Canary, tool string, schema, args json.RawMessage, errText string) (json.RawMessage, bool) {
	root, err := decodeSchema(schema)
	if err != nil {
		return nil, false
	}
	if props, _ := root["properties"].(map[string]any); len(props) > 0 {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil, false
	}
	if m == nil {
		m = map[string]any{}
	}
	props := map[string]any{}
	var names []any
	for _, n := range LearnedFields(errText) {
		if _, present := m[n]; !present {
			props[n] = map[string]any{"type": "string"}
			names = append(names, n)
		}
	}
	if len(props) == 0 {
		return nil, false
	}
	learnt := map[string]any{"type": "object", "properties": props, "required": names}
	s := &synth{canary: c, root: learnt, dirs: dirTool.MatchString(tool), create: createTool.MatchString(tool), mode: modeAllProps, budget: maxValues}
	v, ok := s.value(learnt, "", 0)
	vm, _ := v.(map[string]any)
	if !ok || vm == nil {
		return nil, false
	}
	for k, x := range vm {
		m[k] = x
	}
	b, err := json.Marshal(m)
	return b, err == nil
}
