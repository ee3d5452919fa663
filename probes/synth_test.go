package probes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSynthesizeValidArguments(t *testing.T) {
	for name, c := range map[string]struct {
		schema string
		check  func(map[string]any) bool
	}{
		"empty": {`{"type":"object"}`, func(m map[string]any) bool { return len(m) == 0 }},
		"null":  {``, func(m map[string]any) bool { return len(m) == 0 }},
		"path":  {`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, func(m map[string]any) bool { return m["path"] == DefaultCanary().Text }},
		"dir":   {`{"type":"object","properties":{"directory":{"type":"string"}},"required":["directory"]}`, func(m map[string]any) bool { return m["directory"] == DefaultCanary().Dir }},
		"move": {`{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},"required":["source","destination"]}`, func(m map[string]any) bool {
			return m["source"] == DefaultCanary().Text && m["destination"] == DefaultCanary().New
		}},
		"paths":    {`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}},"required":["paths"]}`, func(m map[string]any) bool { return len(m["paths"].([]any)) == 1 }},
		"enum":     {`{"type":"object","properties":{"mode":{"enum":["fast","slow"]}},"required":["mode"]}`, func(m map[string]any) bool { return m["mode"] == "fast" }},
		"const":    {`{"type":"object","properties":{"v":{"const":3}},"required":["v"]}`, func(m map[string]any) bool { return m["v"] == 3.0 }},
		"default":  {`{"type":"object","properties":{"n":{"type":"integer","default":7}},"required":["n"]}`, func(m map[string]any) bool { return m["n"] == 7.0 }},
		"bounds":   {`{"type":"object","properties":{"n":{"type":"integer","minimum":10,"maximum":20,"multipleOf":5}},"required":["n"]}`, nil},
		"exclmax":  {`{"type":"object","properties":{"x":{"type":"number","exclusiveMaximum":0}},"required":["x"]}`, nil},
		"strlen":   {`{"type":"object","properties":{"s":{"type":"string","minLength":12,"maxLength":12}},"required":["s"]}`, nil},
		"pattern":  {`{"type":"object","properties":{"id":{"type":"string","pattern":"^[0-9]+$"}},"required":["id"]}`, nil},
		"prefix":   {`{"type":"object","properties":{"id":{"type":"string","pattern":"^ISSUE-[0-9]+$"}},"required":["id"]}`, nil},
		"formats":  {`{"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uri"},"e":{"type":"string","format":"email"},"id":{"type":"string","format":"uuid"}},"required":["d","t","u","e","id"]}`, nil},
		"minItems": {`{"type":"object","properties":{"a":{"type":"array","minItems":3,"uniqueItems":true,"items":{"type":"string"}}},"required":["a"]}`, func(m map[string]any) bool { return len(m["a"].([]any)) == 3 }},
		"nested":   {`{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"boolean"}},"required":["k"]}},"required":["o"]}`, nil},
		"ref":      {`{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"integer","minimum":3}},"required":["x"]}},"properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"]}`, nil},
		"defs07":   {`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"S":{"type":"string","minLength":2}},"type":"object","properties":{"s":{"$ref":"#/definitions/S"}},"required":["s"],"additionalProperties":false}`, nil},
		"oneOf":    {`{"type":"object","properties":{"v":{"oneOf":[{"type":"string","pattern":"^zz$"},{"type":"integer","minimum":5}]}},"required":["v"]}`, nil},
		"anyOf":    {`{"type":"object","properties":{"v":{"anyOf":[{"type":"null"},{"type":"string"}]}},"required":["v"]}`, nil},
		"allOf":    {`{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"}},"required":["b"]}]}`, func(m map[string]any) bool { return m["a"] != nil && m["b"] != nil }},
		"typelist": {`{"type":"object","properties":{"v":{"type":["null","integer"]}},"required":["v"]}`, nil},
		"needsall": {`{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1,"additionalProperties":false}`, func(m map[string]any) bool { return m["a"] != nil }},
	} {
		t.Run(name, func(t *testing.T) {
			args, err := Synthesize(json.RawMessage(c.schema))
			if err != nil {
				t.Fatalf("Synthesize: %v", err)
			}
			if err := Validate(json.RawMessage(c.schema), args); err != nil {
				t.Fatalf("%s does not validate: %v", args, err)
			}
			var m map[string]any
			json.Unmarshal(args, &m)
			if c.check != nil && !c.check(m) {
				t.Errorf("arguments %s", args)
			}
		})
	}
}

func TestSynthesizeSaysWhyItCannot(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"x":{"type":"string","minLength":5,"maxLength":2}},"required":["x"]}`,
		`{"type":"object","properties":{"x":{"not":{}}},"required":["x"]}`,
		`{"type":"object","properties":{"p":{"$ref":"#/$defs/missing"}},"required":["p"]}`,
		`[1,2]`,
	} {
		if args, err := Synthesize(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: made %s", schema, args)
		} else if err.Error() == "" {
			t.Errorf("%s: empty reason", schema)
		}
	}
}

// FuzzSynthesize: over random schemas the synthesizer never panics, ends
// within a bound, and what it returns validates.
func FuzzSynthesize(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"array","minItems":2,"items":{"$ref":"#"}}},"required":["a"]}`,
		`{"oneOf":[{"type":"object","required":["x"],"properties":{"x":{"enum":[1]}}}]}`, `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-f]{3}$"}},"required":["s"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		done := make(chan struct{})
		var args json.RawMessage
		var err error
		go func() {
			defer close(done)
			args, err = Synthesize(json.RawMessage(schema))
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Synthesize(%q) did not end within 5s", schema)
		}
		if err == nil {
			if verr := Validate(json.RawMessage(schema), args); verr != nil {
				t.Fatalf("Synthesize(%q) = %s, which does not validate: %v", schema, args, verr)
			}
			if !strings.HasPrefix(string(args), "{") {
				t.Fatalf("arguments %s are not an object", args)
			}
		}
	})
}

// TestHostileSchemas: huge lengths, exponential arrays and external $refs
// end quickly with a reason, read nothing on the host, and never panic.
func TestHostileSchemas(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"type":"string","minLength":1e19}},"required":["s"]}`,
		`{"type":"object","properties":{"s":{"type":"string","minLength":1e12}},"required":["s"]}`,
		`{"type":"object","properties":{"a":{"type":"array","minItems":64,"items":{"type":"array","minItems":64,"items":{"type":"array","minItems":64,"items":{"type":"array","minItems":64,"items":{"type":"array","minItems":64,"items":{"type":"string"}}}}}}},"required":["a"]}`,
		`{"type":"object","properties":{"p":{"$ref":"file:///etc/hostname"}},"required":["p"]}`,
		`{"type":"object","properties":{"p":{"$ref":"http://127.0.0.1:9/x.json"}},"required":["p"]}`,
	} {
		// A blow-up would hang here until go test's timeout: no clock needed.
		args, err := Synthesize(json.RawMessage(schema))
		if err == nil && (strings.Contains(schema, "$ref") || len(args) > 2*maxString) {
			t.Errorf("%.60s: made %d bytes of arguments", schema, len(args))
		}
	}
}

// TestRepair: an error that names a missing property has it added (of
// "either A or B", A's; not its default, which was refused); one that quotes a value back and lists what it
// accepts has the value replaced; a boolean it asks to be true is set
// true; an error that says none of these changes nothing.
func TestRepair(t *testing.T) {
	c := DefaultCanary()
	date := json.RawMessage(`{"type":"object","properties":{"action":{"enum":["diff","add"]},"date":{"type":"string"},"date2":{"type":"string","description":"Second date for diff"},"amount":{"type":"number"}},"required":["action","date"]}`)
	units := json.RawMessage(`{"type":"object","properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}},"required":["value","from","to"]}`)
	clean := json.RawMessage(`{"type":"object","properties":{"force":{"type":"boolean"},"dryRun":{"type":"boolean"},"path":{"type":"string"}}}`)
	edit := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"range":{"type":"string"},"content":{}},"required":["file_path"]}`)
	add := json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array","default":[],"items":{"type":"string","minLength":1}},"all":{"type":"boolean","default":false},"update":{"type":"boolean","default":false}}}`)
	for _, tc := range []struct {
		schema     json.RawMessage
		args, text string
		want       string // "" for no repair
	}{
		{date, `{"action":"diff","date":"2026-01-01"}`, "Error: date2 is required for diff", `{"action":"diff","date":"2026-01-01","date2":"2026-01-01"}`},
		{units, `{"from":"example","to":"example","value":1}`, "Error: Unknown unit: example. Supported units: m, km, cm", `{"from":"m","to":"m","value":1}`},
		{units, `{"from":"examples","to":"m","value":1}`, "Unknown unit: example. Supported units: m, km", ""},
		{date, `{"action":"diff","date":"2026-01-01"}`, "Error: something broke (date2)", ""},
		{date, `{"action":"diff","date":"2026-01-01"}`, "Error: Invalid date", ""},
		{json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"mode":{"enum":["rewrite","append"],"default":"rewrite"}},"required":["path"]}`),
			`{"path":"/w/a"}`, "Write rejected: /w/a exists, and no 'mode' was specified, the default 'rewrite' would replace it", `{"mode":"rewrite","path":"/w/a"}`},
		{json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"value":{"type":"boolean"}},"required":["key","value"]}`),
			`{"key":"example","value":false}`, `Key "example" is not configurable. Allowed keys: telemetryEnabled, defaultShell`, `{"key":"telemetryEnabled","value":false}`},
		{clean, `{}`, "Invalid arguments for tool t: force flag must be set to true to clean untracked files (or use dryRun to preview) at force", `{"dryRun":false,"force":true}`},
		{clean, `{"dryRun":false,"force":false}`, "force flag must be set to true (or use dryRun to preview)", `{"dryRun":false,"force":true}`},
		{clean, `{"force":true}`, "force flag must be set to true", ""},
		{clean, `{}`, "set it to true", ""},
		{edit, `{"file_path":"/w/a"}`, `Must provide either (old_string + new_string) or (range + content)`, `{"file_path":"/w/a","new_string":"example","old_string":"` + c.Snippet + `"}`},
		{add, `{}`, "Either paths must be provided, or all/update must be true. at paths", `{"paths":["` + c.Text + `"]}`},
	} {
		got, ok := RepairIn(c, "t", tc.schema, json.RawMessage(tc.args), tc.text)
		if tc.want == "" {
			if ok {
				t.Errorf("%s / %q: repaired to %s", tc.args, tc.text, got)
			}
			continue
		}
		if !ok || string(got) != tc.want {
			t.Errorf("%s / %q: %s (%v), want %s", tc.args, tc.text, got, ok, tc.want)
		}
	}
}

// TestNoCandidateOfDefaultsAfterEmpty: after {}, a candidate that only
// spells out the defaults is the same call; the next one differs.
func TestNoCandidateOfDefaultsAfterEmpty(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"data":{"type":"string","format":"uri","default":"https://example.org/x"},"kind":{"enum":["a","b"],"default":"a"}}}`)
	cands, err := CandidatesIn(DefaultCanary(), "t", schema, MaxCandidates)
	if err != nil {
		t.Fatal(err)
	}
	if string(cands[0]) != "{}" || len(cands) < 2 || string(cands[1]) != `{"data":"http://example.com/","kind":"b"}` {
		t.Errorf("candidates %s", cands)
	}
}
