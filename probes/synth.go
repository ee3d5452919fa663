package probes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// maxDepth bounds recursion through nested schemas and $refs.
const maxDepth = 12

// Synthesize returns minimal arguments that the tool's input schema
// accepts, checked with a JSON Schema validator. Properties that name a
// path, file or directory point at the canary files. When no valid input
// can be made, the error says why.
func Synthesize(schema json.RawMessage) (json.RawMessage, error) {
	return SynthesizeFor("", schema)
}

// dirTool and createTool read a tool's name: a "path" of a directory tool
// names a directory, and of a creating tool a path that does not exist.
var (
	dirTool    = regexp.MustCompile(`(?i)(dir|folder|tree|list|search|find|glob)`)
	createTool = regexp.MustCompile(`(?i)(create|mkdir|new)`)
	// startTool: a tool that starts something and leaves it running
	// (start_process, spawn_shell, launch_app).
	startTool = regexp.MustCompile(`(?i)(start|spawn|launch)`)
)

// Commands for a command property: of a tool that starts a process and
// leaves it running, one that stays (cat waits for input, echoes what it
// is sent, and ends with the scan's container), so that the tools that
// read, write to or stop a process by its id find it alive; of others,
// one that ends at once with output.
const (
	startCommand = "cat"
	runCommand   = "echo ok"
)

// commandWords name a property that holds a shell command line.
var commandWords = map[string]bool{"command": true, "cmd": true, "commandline": true}

// newBranch is the branch name a tool that creates a branch is given:
// the canary clone has main and release-1.4, not this one.
const newBranch = "feature-example"

// baseWords name the branch a new one starts from (base_branch,
// from_branch), which exists.
var baseWords = map[string]bool{"base": true, "from": true, "source": true, "start": true, "parent": true}

// oldWords name a property that holds the text an edit replaces
// (old_string, oldText, old_str).
var oldWords = map[string]bool{"old": true}

// SynthesizeFor is Synthesize with the tool's name as a hint for paths.
func SynthesizeFor(tool string, schema json.RawMessage) (json.RawMessage, error) {
	return SynthesizeIn(DefaultCanary(), tool, schema)
}

// SynthesizeIn is SynthesizeFor with paths that point into canary c.
func SynthesizeIn(c Canary, tool string, schema json.RawMessage) (json.RawMessage, error) {
	cands, err := CandidatesIn(c, tool, schema, 1)
	if err != nil {
		return nil, err
	}
	return cands[0], nil
}

// MaxCandidates bounds the argument objects CandidatesIn makes for one
// tool: the first call and the retries after a validation error.
const MaxCandidates = 3

// attempts are the syntheses tried, in order: required properties only,
// then every property, each with its first choice of values, then the
// next choices (alt): a boolean-or-string union's string, an enum's next
// value, the next candidate string.
var attempts = []struct{ mode, alt int }{
	{modeMinimal, 0}, {modeAllProps, 0}, {modeMinimal, 1}, {modeAllProps, 1}, {modeMinimal, 2}, {modeAllProps, 2},
}

// CandidatesIn returns up to n (at most MaxCandidates) distinct argument
// objects that the tool's input schema accepts, best first, with paths
// that point into canary c. The same inputs give the same candidates in
// the same order. When none can be made, the error says why.
func CandidatesIn(c Canary, tool string, schema json.RawMessage, n int) ([]json.RawMessage, error) {
	root, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	v, err := compile(schema)
	if err != nil {
		return nil, err
	}
	n = max(1, min(n, MaxCandidates))
	s := &synth{canary: c, root: root, dirs: dirTool.MatchString(tool), create: createTool.MatchString(tool), starts: startTool.MatchString(tool)}
	var lastErr error
	var out []json.RawMessage
	seen := map[string]bool{}
	for _, a := range attempts {
		if len(out) >= n {
			break
		}
		s.mode, s.alt, s.budget = a.mode, a.alt, maxValues
		val, ok := s.value(root, "", 0)
		if !ok {
			continue
		}
		if _, isObj := val.(map[string]any); !isObj {
			val = map[string]any{} // tool arguments are always an object
		}
		b, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		if seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		if seen["{}"] && onlyDefaults(s.root, val) {
			continue // what {} means already: the server fills in the defaults
		}
		if err := validate(v, b); err != nil {
			if len(out) == 0 {
				lastErr = err
			}
			continue
		}
		out = append(out, b)
	}
	if len(out) > 0 {
		return out, nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no value satisfies the schema")
	}
	return nil, fmt.Errorf("no valid arguments could be made: %s", report.OneLine(lastErr.Error()))
}

// Validate checks arguments against a tool's input schema.
func Validate(schema, args json.RawMessage) error {
	v, err := compile(schema)
	if err != nil {
		return err
	}
	return validate(v, args)
}

func decodeSchema(schema json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
		return map[string]any{"type": "object"}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("input schema is not an object: %v", err)
	}
	return m, nil
}

func compile(schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	// A tool's schema is untrusted: no $ref may reach a file or a URL.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	const url = "mcp://tool/input-schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema does not compile: %s", report.OneLine(err.Error()))
	}
	return s, nil
}

func validate(s *jsonschema.Schema, args []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

const (
	modeMinimal  = iota // required properties only
	modeAllProps        // every declared property (some servers need more than they require)
)

type synth struct {
	canary Canary
	root   map[string]any
	mode   int
	// alt picks the next choice of value where there are several (see
	// attempts): 0 is the first.
	alt          int
	dirs, create bool // the tool's name speaks of directories, or of making something
	starts       bool // the tool's name speaks of starting something that stays (startTool)
	// budget bounds the values made (nested arrays and oneOf retries grow
	// exponentially on a hostile schema).
	budget int
}

// maxValues and maxString bound the work and size of one synthesis.
const (
	maxValues = 10_000
	maxString = 4096
)

// value makes a value for schema s; name is the property it is for.
func (y *synth) value(s map[string]any, name string, depth int) (any, bool) {
	if depth > maxDepth || s == nil || y.budget <= 0 {
		return nil, false
	}
	y.budget--
	if ref, ok := s["$ref"].(string); ok {
		t, ok := y.resolve(ref)
		if !ok {
			return nil, false
		}
		merged := merge(t, without(s, "$ref"))
		return y.value(merged, name, depth+1)
	}
	if c, ok := s["const"]; ok {
		return c, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[y.alt%len(e)], true
	}
	if all, ok := s["allOf"].([]any); ok {
		m := without(s, "allOf")
		for _, a := range all {
			if am, ok := a.(map[string]any); ok {
				m = merge(m, y.deref(am, depth))
			}
		}
		return y.value(m, name, depth+1)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			base := without(s, key)
			for _, a := range y.branches(alts, depth) {
				if v, ok := y.value(merge(base, a), name, depth+1); ok {
					return v, true
				}
			}
			return nil, false
		}
	}
	// The schema's own default and examples come first, then the next
	// choices of the type.
	var given []any
	if d, ok := s["default"]; ok {
		given = append(given, d)
	}
	if ex, ok := s["examples"].([]any); ok {
		given = append(given, ex...)
	}
	alt := y.alt
	if alt < len(given) {
		return given[alt], true
	}
	alt -= len(given)
	switch t := y.typeFor(s, alt); t {
	case "object":
		return y.object(s, depth)
	case "array":
		return y.array(s, name, depth)
	case "string":
		return y.str(s, name, alt), true
	case "integer", "number":
		return number(s, t == "integer", name, alt), true
	case "boolean":
		return alt%2 == 1, true
	case "null":
		return nil, true
	case "":
		if _, not := s["not"]; !not {
			return y.str(s, name, alt), true // no type at all: any string is allowed
		}
	}
	return nil, false
}

// typeFor is the type to make a value of: for a union of boolean and
// string, the boolean first (a flag that also takes a word) and the string
// as the next choice.
func (y *synth) typeFor(s map[string]any, alt int) string {
	if ts, ok := s["type"].([]any); ok && slices.Contains(ts, any("boolean")) && slices.Contains(ts, any("string")) {
		if alt%2 == 1 {
			return "string"
		}
		return "boolean"
	}
	return typeOf(s)
}

// branches orders a oneOf's or anyOf's alternatives: boolean ones first,
// as for a type union, and from the alt-th on for the next choices.
func (y *synth) branches(alts []any, depth int) []map[string]any {
	var bools, rest []map[string]any
	for _, a := range alts {
		am, ok := a.(map[string]any)
		if !ok {
			continue
		}
		am = y.deref(am, depth)
		if am["type"] == "boolean" {
			bools = append(bools, am)
		} else {
			rest = append(rest, am)
		}
	}
	out := append(bools, rest...)
	if len(out) > 1 && y.alt > 0 {
		k := y.alt % len(out)
		out = append(append([]map[string]any{}, out[k:]...), out[:k]...)
	}
	return out
}

func (y *synth) deref(s map[string]any, depth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok && depth < maxDepth {
		if t, ok := y.resolve(ref); ok {
			return merge(y.deref(t, depth+1), without(s, "$ref"))
		}
	}
	return s
}

// resolve follows a local JSON pointer ("#/$defs/x", "#/definitions/x").
func (y *synth) resolve(ref string) (map[string]any, bool) {
	if ref == "#" {
		return y.root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = y.root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, pref := range []string{"object", "string", "integer", "number", "boolean", "array", "null"} {
			for _, x := range t {
				if x == pref {
					return pref
				}
			}
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	case s["minLength"] != nil || s["pattern"] != nil || s["format"] != nil:
		return "string"
	case s["minimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return ""
}

func (y *synth) object(s map[string]any, depth int) (any, bool) {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	var names []string
	switch y.mode {
	case modeMinimal:
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if n, ok := r.(string); ok {
					names = append(names, n)
				}
			}
		}
	case modeAllProps:
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		if ps == nil {
			ps = map[string]any{}
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				ps = ap
			}
		}
		v, ok := y.value(ps, n, depth+1)
		if !ok {
			if y.mode == modeAllProps && !isRequired(s, n) {
				continue
			}
			return nil, false
		}
		out[n] = v
	}
	if mp, ok := num(s["minProperties"]); ok && mp > 0 {
		for i := 0; float64(len(out)) < mp && i < 64; i++ {
			out[fmt.Sprintf("p%d", i)] = "example"
		}
	}
	return out, true
}

func isRequired(s map[string]any, n string) bool {
	req, _ := s["required"].([]any)
	for _, r := range req {
		if r == n {
			return true
		}
	}
	return false
}

func (y *synth) array(s map[string]any, name string, depth int) (any, bool) {
	n := 0
	if mi, ok := num(s["minItems"]); ok {
		if mi > 64 {
			return nil, false // more than a probe should send
		}
		n = int(math.Max(mi, 0))
	}
	// An empty list probes nothing (no path read, no entity made): one
	// item where the schema allows it and one can be made, else none.
	optional := false
	if mx, ok := num(s["maxItems"]); n == 0 && (!ok || mx >= 1) {
		n, optional = 1, true
	}
	items, _ := s["items"].(map[string]any)
	if items == nil {
		items = map[string]any{}
	}
	out := []any{}
	unique := s["uniqueItems"] == true
	for i := 0; i < n; i++ {
		v, ok := y.value(items, singular(name), depth+1)
		if !ok && optional {
			return out, true
		}
		if !ok {
			return nil, false
		}
		if unique {
			v = uniquify(v, i)
		}
		out = append(out, v)
	}
	return out, true
}

func uniquify(v any, i int) any {
	switch x := v.(type) {
	case string:
		if i > 0 {
			return fmt.Sprintf("%s-%d", x, i)
		}
	case float64:
		return x + float64(i)
	}
	return v
}

func singular(name string) string { return strings.TrimSuffix(name, "s") }

// str makes a string for schema s, property name: the alt-th of its
// candidates that fits the schema's length and pattern (the last that
// fits when there are fewer).
func (y *synth) str(s map[string]any, name string, alt int) string {
	minLen, _ := num(s["minLength"])
	minLen = math.Max(0, math.Min(minLen, maxString)) // a longer minimum fails validation, with the reason
	maxLen, hasMax := num(s["maxLength"])
	desc, _ := s["description"].(string)
	format, _ := s["format"].(string)
	var cand []string
	if p := y.pathFor(name, desc, format); p != "" {
		if format == "uri" || format == "iri" || format == "uri-reference" {
			cand = append(cand, "file://"+p)
		}
		cand = append(cand, p)
	}
	if v, ok := formatExample(format); ok {
		cand = append(cand, v)
	}
	cand = append(cand, RevisionValues(name, desc)...) // before the description's examples: "-" of "must not start with "-""
	if ws := Words(name); y.create && slices.Contains(ws, "branch") && !slices.ContainsFunc(ws, func(w string) bool { return baseWords[w] }) {
		cand = append(cand, newBranch) // the branch a creating tool makes: not one that exists
	} else if slices.ContainsFunc(ws, func(w string) bool { return oldWords[w] }) && y.canary.Snippet != "" {
		cand = append(cand, y.canary.Snippet) // text the canary file has: the edit is made
	} else if slices.ContainsFunc(ws, func(w string) bool { return commandWords[w] }) {
		if y.starts {
			cand = append(cand, startCommand)
		}
		cand = append(cand, runCommand)
	}
	// The description's own examples come before what the name suggests:
	// they say what this server accepts.
	cand = append(cand, DescriptionExamples(desc)...)
	cand = append(cand, JSONURLValues(name, desc)...)
	cand = append(cand, NameValues(name)...)
	cand = append(cand, DescriptionValues(desc)...)
	if p, ok := s["pattern"].(string); ok {
		cand = append(cand, patternExamples(p)...)
	}
	cand = append(cand, "example", "a", "0", "example-example-example")
	re := (*regexp.Regexp)(nil)
	if p, ok := s["pattern"].(string); ok {
		re, _ = regexp.Compile(p)
	}
	var fit []string
	for _, c := range cand {
		n := len([]rune(c))
		if float64(n) < minLen {
			c += strings.Repeat("x", int(minLen)-n)
			n = int(minLen)
		}
		if hasMax && float64(n) > maxLen {
			continue
		}
		if re != nil && !re.MatchString(c) {
			continue
		}
		if slices.Contains(fit, c) {
			continue
		}
		fit = append(fit, c)
		if len(fit) > alt {
			return c
		}
	}
	if len(fit) > 0 {
		return fit[len(fit)-1]
	}
	return strings.Repeat("x", int(math.Max(minLen, 1)))
}

// pathFor is the canary path a path-like property points at, or "": a
// new path for destinations and for tools that create, a directory for
// directory properties and directory tools, else the canary text file.
func (y *synth) pathFor(name, desc, format string) string {
	k := ClassifyPath(name, desc, format)
	switch {
	case k == PathNone:
		return ""
	case k == PathDest:
		return y.canary.New
	case k == PathDir && RepoDir(name):
		return y.canary.Dir // the repository the tool works in, even when it creates
	case y.create && y.dirs:
		return y.canary.NewDir
	case y.create:
		return y.canary.New
	case k == PathDir || y.dirs:
		return y.canary.Dir
	}
	return y.canary.File(name, desc)
}

func formatExample(f string) (string, bool) {
	v, ok := map[string]string{
		"date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "time": "00:00:00Z", "uri": exampleURL,
		"url": exampleURL, "uri-reference": "/docs", "iri": exampleURL, "email": "alex@example.com",
		"uuid": "00000000-0000-4000-8000-000000000000", "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
		"duration": "P1D", "regex": "example", "json-pointer": "/example",
	}[f]
	return v, ok
}

// patternExamples offers strings for common simple patterns.
// patternShapes are values of common formats, tried against a pattern.
var patternShapes = []string{"00000000-0000-4000-8000-000000000000", "2026-01-01T00:00:00Z", "1.0.0", "v1.0.0",
	"alex@example.com", "example.com", "192.0.2.1", "#336699", "deadbeef", "0123456789abcdef0123456789abcdef01234567"}

func patternExamples(p string) []string {
	out := []string{"example", "EXAMPLE", "example1", "1", "123", "a-b", "a_b", "A1", "abc123", "2026-01-01", "x.y"}
	// Then the shapes of the common formats a pattern spells out rather
	// than names (an id that must be a UUID, a version, a time).
	out = append(out, patternShapes...)
	// A literal prefix before the first metacharacter often makes a match.
	lit := strings.TrimPrefix(p, "^")
	if i := strings.IndexAny(lit, `\[(.*+?{|$`); i > 0 {
		out = append([]string{lit[:i] + "example", lit[:i] + "1", lit[:i]}, out...)
	}
	return out
}

// number makes a number within the schema's bounds: 1 (a count, a limit,
// a page), 0 for offsets and indexes, the year for years, NoPID for a
// process id; the next choices (not for a pid) are 10, then the lowest
// allowed.
func number(s map[string]any, integer bool, name string, alt int) any {
	lo, hasLo := num(s["minimum"])
	hi, hasHi := num(s["maximum"])
	if x, ok := num(s["exclusiveMinimum"]); ok {
		lo, hasLo = x+1e-9, true
		if integer {
			lo = math.Floor(x) + 1
		}
	}
	if x, ok := num(s["exclusiveMaximum"]); ok {
		hi, hasHi = x-1e-9, true
		if integer {
			hi = math.Ceil(x) - 1
		}
	}
	v := NameNumber(name)
	switch {
	case alt == 0 || PIDLike(name): // a pid's next choices could be a live process
	case alt == 1:
		v = 10
	default:
		v = 0
		if hasLo {
			v = lo
		}
	}
	switch {
	case hasLo && v < lo:
		v = lo
	case hasHi && v > hi:
		v = hi
	}
	if integer {
		v = math.Ceil(v)
		if hasHi && v > hi {
			v = math.Floor(hi)
		}
	}
	if m, ok := num(s["multipleOf"]); ok && m > 0 {
		v = math.Ceil(v/m) * m
		if hasHi && v > hi {
			v -= m
		}
	}
	if integer {
		return int64(v)
	}
	return v
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if k == "required" {
			ra, _ := out[k].([]any)
			rb, _ := v.([]any)
			out[k] = append(append([]any{}, ra...), rb...)
			continue
		}
		if k == "properties" {
			pa, _ := out[k].(map[string]any)
			pb, _ := v.(map[string]any)
			m := map[string]any{}
			for kk, vv := range pa {
				m[kk] = vv
			}
			for kk, vv := range pb {
				m[kk] = vv
			}
			out[k] = m
			continue
		}
		out[k] = v
	}
	return out
}

func without(s map[string]any, key string) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// maxErrorText bounds the bytes of an error read by Repair: the server
// writes it.
const maxErrorText = 8 << 10

var (
	// needWords mark an error that asks for something.
	needWords = regexp.MustCompile(`(?i)\b(required|missing|provide|provided|must|needs?|expected|specify|specified)\b`)
	identWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	// eitherOr finds the alternatives of "either A or B" up to the end of
	// the sentence: only A's properties are added.
	eitherOr = regexp.MustCompile(`(?i)\beither\b(.*?)\bor\b([^.\n]*)`)
	trueWord = regexp.MustCompile(`\btrue\b`)
)

// RepairIn reads the error a tool answered arguments args with for what
// to change, with paths into canary c: each property of the schema that
// args leave out and that the error names where it asks for something
// ("date2 is required for diff", "ip or cidr is required") is added with
// its synthesized value; each string the error quotes back ("Unknown
// unit: example") takes the first value of a list the error gives
// ("Supported units: m, km") that the schema accepts; a path keeps its
// canary; of "either A or B", only A's properties are added; a boolean
// the error asks to be true ("force must be set to true") is set true. It
// says false when nothing
// changes or the result is not valid. Bounded: the first maxErrorText
// bytes of the error.
func RepairIn(c Canary, tool string, schema, args json.RawMessage, errText string) (json.RawMessage, bool) {
	root, err := decodeSchema(schema)
	if err != nil {
		return nil, false
	}
	v, err := compile(schema)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil || m == nil {
		return nil, false
	}
	props, _ := root["properties"].(map[string]any)
	errText = clip(errText, maxErrorText)
	changed := false
	named := map[string]bool{}
	for _, w := range identWord.FindAllString(errText, -1) {
		named[w] = true
	}
	if m := eitherOr.FindStringSubmatchIndex(errText); m != nil {
		first := map[string]bool{}
		for _, w := range identWord.FindAllString(errText[m[2]:m[3]], -1) {
			first[w] = true
		}
		for _, w := range identWord.FindAllString(errText[m[4]:m[5]], -1) {
			if !first[w] {
				delete(named, w)
			}
		}
	}
	if needWords.MatchString(errText) {
		s := &synth{canary: c, root: root, dirs: dirTool.MatchString(tool), create: createTool.MatchString(tool), mode: modeAllProps, budget: maxValues}
		full, _ := s.value(root, "", 0)
		fm, _ := full.(map[string]any)
		for _, name := range sortedKeys(props) {
			if _, present := m[name]; present || !named[name] {
				continue
			}
			fv, ok := fm[name]
			if !ok {
				continue
			}
			// Asked for, the default is what the server just refused
			// (paths: [] for "paths must be provided"): a value of the
			// property's own schema without it instead.
			if ps, _ := props[name].(map[string]any); ps != nil {
				if d, has := ps["default"]; has && reflect.DeepEqual(d, fv) {
					if nv, ok := s.value(without(ps, "default"), name, 1); ok {
						fv = nv
					}
				}
			}
			m[name], changed = fv, true
		}
	}
	// A boolean the error asks to be true ("force flag must be set to
	// true", "set confirm to true"): the last one it names before its
	// first "true".
	if loc := trueWord.FindStringIndex(errText); loc != nil {
		words := identWord.FindAllString(errText[:loc[0]], -1)
		for i := len(words) - 1; i >= 0; i-- {
			ps, _ := props[words[i]].(map[string]any)
			if typ, _ := ps["type"].(string); typ != "boolean" || !named[words[i]] {
				continue
			}
			if m[words[i]] != true {
				m[words[i]], changed = true, true
			}
			break
		}
	}
	if ex := ListedValues(errText); len(ex) > 0 {
		for _, name := range sortedKeys(m) {
			cur, ok := m[name].(string)
			if !ok || cur == "" || slices.Contains(ex, cur) || !containsToken(errText, cur) {
				continue
			}
			if ps, _ := props[name].(map[string]any); ps != nil {
				if desc, _ := ps["description"].(string); ClassifyPath(name, desc, "") != PathNone {
					continue // a path keeps its canary
				}
			}
			for _, e := range ex {
				if e == cur {
					continue
				}
				m[name] = e
				if b, err := json.Marshal(m); err == nil && validate(v, b) == nil {
					changed = true
					break
				}
				m[name] = cur
			}
		}
	}
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(m)
	if err != nil || validate(v, b) != nil || bytes.Equal(b, args) {
		return nil, false
	}
	return b, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// containsToken says whether s occurs in text as a whole token: not
// inside a longer word ("example" is not in "examples").
func containsToken(text, s string) bool {
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; i <= len(text)-len(s); {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(text[:j])
		after, _ := utf8.DecodeRuneInString(text[j+len(s):])
		if (j == 0 || !isWord(before)) && (j+len(s) == len(text) || !isWord(after)) {
			return true
		}
		i = j + 1
	}
	return false
}

// onlyDefaults says whether each of an object's properties holds its
// schema's default.
func onlyDefaults(schema map[string]any, val any) bool {
	m, ok := val.(map[string]any)
	if !ok || len(m) == 0 {
		return false
	}
	props, _ := schema["properties"].(map[string]any)
	for k, v := range m {
		ps, _ := props[k].(map[string]any)
		d, ok := ps["default"]
		if !ok || !reflect.DeepEqual(d, v) {
			return false
		}
	}
	return true
}
