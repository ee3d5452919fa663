package probes

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"targetTimezone":  {"target", "timezone"},
		"set_working_dir": {"set", "working", "dir"},
		"HTTPPath":        {"http", "path"},
		"file-path":       {"file", "path"},
		"sessionId":       {"session", "id"},
		"page2Size":       {"page", "2", "size"},
		"date2":           {"date", "2"},
		"ipv4":            {"ipv", "4"},
		"2fa":             {"2fa"},
		"":                nil,
	} {
		if got := Words(in); !slices.Equal(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClassifyPath(t *testing.T) {
	for _, c := range []struct {
		name, desc, format string
		want               PathKind
	}{
		{"path", "", "", PathFile},
		{"path", "The directory to search in", "", PathDir},
		{"path", "Directory to search for files", "", PathDir},
		{"path", "The file to read, relative to the root directory", "", PathFile},
		{"path", "Path to a file or directory", "", PathFile},
		{"searchPath", "Folder to start from", "", PathDir},
		{"filePath", "", "", PathFile},
		{"file_name", "", "", PathFile},
		{"directory", "", "", PathDir},
		{"rootDir", "", "", PathDir},
		{"cwd", "", "", PathDir},
		{"repo_path", "Path to Git repository", "", PathDir}, // a repository is a directory
		{"workdir", "", "", PathDir},
		{"projectFilePath", "", "", PathFile},
		{"repo", "owner/name", "", PathNone},
		{"destination", "", "", PathDest},
		{"newPath", "", "", PathDest},
		{"target_dir", "", "", PathDest},
		{"source", "", "", PathFile},
		{"source", "Path of the file to copy", "", PathFile},
		{"source", "Source language of the text", "", PathNone},
		{"target", "The target to deploy to", "", PathNone},
		{"targetTimezone", "", "", PathNone},
		{"timeZone", "", "", PathNone},
		{"newTag", "", "", PathNone},
		{"fileContent", "", "", PathNone},
		{"sourceCode", "", "", PathNone},
		{"profile", "", "", PathNone}, // "file" inside a word is not a word
		{"directoryId", "", "", PathNone},
		{"rootPassword", "", "", PathNone},
		{"repo_path", "", "", PathDir},
		{"projectPath", "", "", PathDir},
	} {
		if got := ClassifyPath(c.name, c.desc, c.format); got != c.want {
			t.Errorf("ClassifyPath(%q, %q) = %v, want %v", c.name, c.desc, got, c.want)
		}
	}
}

func TestDescriptionExamples(t *testing.T) {
	for desc, want := range map[string][]string{
		"Time zone, e.g. America/New_York":               {"America/New_York"},
		"The unit, one of celsius, fahrenheit or kelvin": {"celsius", "fahrenheit", "kelvin"},
		"Use `json` or `yaml`":                           {"json", "yaml"},
		`Sort order ("asc" or "desc")`:                   {"asc", "desc"},
		"For example: 'main'.":                           {"main"},
		// a template cut at its commas is no example, nor "value:" a list
		"Color value: #hex (3/4/6 digits), rgb(r,g,b), or named color": nil,
		"Supported formats: png, jpeg.":                                {"png", "jpeg"},
		// what a value must not be is no example
		`Branch name (no leading "-"), e.g. "main"`:            {"main"},
		`Must not start with "--" or contain "..", use "HEAD"`: {"HEAD"},
		"Nothing to see here.":                                 nil,
	} {
		if got := DescriptionExamples(desc); !slices.Equal(got, want) {
			t.Errorf("DescriptionExamples(%q) = %q, want %q", desc, got, want)
		}
	}
	long := "e.g. " + string(make([]byte, 5000))
	if got := DescriptionExamples(long); len(got) > maxExamples {
		t.Errorf("%d examples from a long description", len(got))
	}
}

// TestMeaningfulValues: a property's name, schema and description give a
// value that means something, not a canary path or "example".
func TestMeaningfulValues(t *testing.T) {
	c := DefaultCanary()
	for _, tc := range []struct{ prop, want string }{
		{`"targetTimezone":{"type":"string"}`, `"Europe/Paris"`},
		{`"timeZone":{"type":"string","description":"IANA zone, e.g. Asia/Tokyo"}`, `"Asia/Tokyo"`},
		{`"newTag":{"type":"string"}`, `"v1.0.0"`},
		{`"startDate":{"type":"string"}`, `"2026-01-01"`},
		{`"createdAt":{"type":"string"}`, `"2026-01-01T00:00:00Z"`},
		{`"language":{"type":"string"}`, `"en"`},
		{`"currency":{"type":"string","maxLength":3}`, `"USD"`},
		{`"color":{"type":"string"}`, `"#336699"`},
		{`"url":{"type":"string"}`, `"http://example.com/"`},
		{`"site":{"type":"string","format":"uri"}`, `"http://example.com/"`},
		{`"authToken":{"type":"string"}`, `"` + exampleJWT + `"`},
		{`"nextPageToken":{"type":"string"}`, `"example"`},
		{`"unit":{"type":"string","description":"one of celsius, fahrenheit"}`, `"celsius"`},
		{`"flag":{"type":["boolean","string"]}`, `false`},
		{`"flag":{"anyOf":[{"type":"string"},{"type":"boolean"}]}`, `false`},
		{`"limit":{"type":"integer","minimum":1,"maximum":100}`, `1`},
		{`"offset":{"type":"integer"}`, `0`},
		{`"year":{"type":"integer","maximum":2100}`, `2026`},
		{`"filePath":{"type":"string"}`, `"` + c.Text + `"`},
		{`"date2":{"type":"string","description":"Second date for diff"}`, `"2026-01-01"`},
		{`"version2":{"type":"string"}`, `"1.0.0"`},
		{`"ip":{"type":"string"}`, `"192.0.2.1"`},
		{`"target":{"type":"string","description":"Target IP to check against the CIDR"}`, `"192.0.2.1"`},
		{`"cidr":{"type":"string"}`, `"192.0.2.0/24"`},
		{`"expression":{"type":"string","description":"Cron expression (5 fields)"}`, `"0 0 * * *"`},
		{`"expression":{"type":"string","description":"Math expression to evaluate"}`, `"1 + 2"`},
		{`"from":{"type":"string","description":"Source unit"}`, `"m"`},
		{`"number":{"type":"string","description":"Number string to validate"}`, `"12345"`},
		{`"color":{"type":"string","description":"Color value: #hex (3/4/6 digits), rgb(r,g,b), or named color"}`, `"#336699"`},
		{`"pid":{"type":"number"}`, `4194304`},
		{`"processId":{"type":"integer","maximum":99999}`, `99999`},
		{`"target_dir":{"type":"string"}`, `"` + c.New + `"`},
		{`"repo_path":{"type":"string"}`, `"` + c.Dir + `"`},
		{`"url":{"type":"string","description":"URL of the JSON to fetch"}`, `"http://example.com/data.json"`},
		{`"jsonUrl":{"type":"string"}`, `"http://example.com/data.json"`},
		{`"url":{"type":"string","description":"URL of the website to fetch"}`, `"http://example.com/"`},
		{`"old_string":{"type":"string"}`, `"` + c.Snippet + `"`},
		{`"oldText":{"type":"string"}`, `"` + c.Snippet + `"`},
		{`"command":{"type":"string"}`, `"echo ok"`},
		{`"taskId":{"type":"string","pattern":"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"}`, `"00000000-0000-4000-8000-000000000000"`},
	} {
		var one map[string]any
		json.Unmarshal([]byte("{"+tc.prop+"}"), &one)
		var name string
		for k := range one {
			name = k
		}
		schema := `{"type":"object","properties":{` + tc.prop + `},"required":["` + name + `"]}`
		args, err := SynthesizeIn(c, "tool", json.RawMessage(schema))
		if err != nil {
			t.Errorf("%s: %v", tc.prop, err)
			continue
		}
		var m map[string]json.RawMessage
		json.Unmarshal(args, &m)
		if string(m[name]) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.prop, m[name], tc.want)
		}
	}
}

// TestCreateBranch: a tool that creates a branch names a new one; the
// branch it starts from, and a branch of other tools, is main.
func TestCreateBranch(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"branch_name":{"type":"string"},"base_branch":{"type":"string"}},"required":["branch_name","base_branch"]}`)
	if c, _ := SynthesizeIn(DefaultCanary(), "git_create_branch", schema); string(c) != `{"base_branch":"main","branch_name":"feature-example"}` {
		t.Errorf("git_create_branch: %s", c)
	}
	if c, _ := SynthesizeIn(DefaultCanary(), "git_checkout", schema); string(c) != `{"base_branch":"main","branch_name":"main"}` {
		t.Errorf("git_checkout: %s", c)
	}
}

// TestStartCommand: a tool that starts a process gets a command that
// stays (cat), so that the tools that act on the process by its id find
// it; the next candidate ends at once.
func TestStartCommand(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout_ms":{"type":"number"}},"required":["command","timeout_ms"]}`)
	cands, err := CandidatesIn(DefaultCanary(), "start_process", schema, MaxCandidates)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cands[0]), `"command":"cat"`) || len(cands) < 2 || !strings.Contains(string(cands[1]), `"command":"echo ok"`) {
		t.Errorf("candidates %s", cands)
	}
	if c, _ := SynthesizeIn(DefaultCanary(), "run_command", schema); !strings.Contains(string(c), `"command":"echo ok"`) {
		t.Errorf("run_command: %s", c)
	}
}

// TestCandidates: the next candidates differ, validate, and come in the
// same order every time; a boolean-or-string union's string comes next.
func TestCandidates(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"flag":{"type":["boolean","string"]},"mode":{"enum":["a","b"]},"note":{"type":"string"}},"required":["flag","mode"]}`)
	first, err := CandidatesIn(DefaultCanary(), "t", schema, MaxCandidates)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != MaxCandidates {
		t.Fatalf("%d candidates: %s", len(first), first)
	}
	again, _ := CandidatesIn(DefaultCanary(), "t", schema, MaxCandidates)
	for i := range first {
		if string(first[i]) != string(again[i]) {
			t.Errorf("candidate %d differs between runs: %s, %s", i, first[i], again[i])
		}
		if err := Validate(schema, first[i]); err != nil {
			t.Errorf("candidate %s: %v", first[i], err)
		}
		for j := 0; j < i; j++ {
			if string(first[i]) == string(first[j]) {
				t.Errorf("candidates %d and %d are the same: %s", j, i, first[i])
			}
		}
	}
	if string(first[0]) != `{"flag":false,"mode":"a"}` {
		t.Errorf("first candidate %s", first[0])
	}
	var sawString bool
	for _, c := range first[1:] {
		var m map[string]any
		json.Unmarshal(c, &m)
		_, sawString = m["flag"].(string)
		if sawString {
			break
		}
	}
	if !sawString {
		t.Errorf("no candidate tries the union's string: %s", first)
	}
}

func TestPIDLike(t *testing.T) {
	for name, want := range map[string]bool{"pid": true, "targetPid": true, "process_id": true, "pids": true,
		"processName": false, "id": false, "rapid": false, "paid": false} {
		if got := PIDLike(name); got != want {
			t.Errorf("PIDLike(%q) = %v", name, got)
		}
	}
}

// TestPIDNoNextChoice: a pid's next candidates never try a small pid (1
// is the sandbox's init; the server's own is small too).
func TestPIDNoNextChoice(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"pid":{"type":"number"},"signal":{"enum":["TERM","KILL"]}},"required":["pid","signal"]}`)
	cands, err := CandidatesIn(DefaultCanary(), "kill_process", schema, MaxCandidates)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		var m map[string]any
		json.Unmarshal(c, &m)
		if m["pid"] != float64(NoPID) {
			t.Errorf("candidate %s", c)
		}
	}
}

func TestDescriptionValues(t *testing.T) {
	for desc, want := range map[string]string{
		"Cron expression (5 fields: min hour dom mon dow)": "0 0 * * *",
		"Target IP to check against CIDR":                  "192.0.2.1",
		"IPv4 address":                                     "192.0.2.1",
		"Nothing here":                                     "",
	} {
		got := DescriptionValues(desc)
		if (want == "" && got != nil) || (want != "" && (len(got) == 0 || got[0] != want)) {
			t.Errorf("DescriptionValues(%q) = %q, want %q first", desc, got, want)
		}
	}
}

// TestRepoPathOfACreateTool: a create tool's repository exists.
func TestRepoPathOfACreateTool(t *testing.T) {
	c := DefaultCanary()
	args, err := SynthesizeIn(c, "git_create_branch", json.RawMessage(`{"type":"object","properties":{"repo_path":{"type":"string"},"path":{"type":"string"}},"required":["repo_path","path"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	json.Unmarshal(args, &m)
	if m["repo_path"] != c.Dir || m["path"] != c.New {
		t.Errorf("%s", args)
	}
}

// TestRevisionValues: properties that name a git revision, by name or by
// description, are given HEAD; a commit message is not a revision.
func TestRevisionValues(t *testing.T) {
	for _, c := range []struct {
		name, desc string
		want       bool
	}{
		{"revision", "", true},
		{"commitSha", "", true},
		{"upstream", "Upstream branch to rebase onto", true},
		{"commit", "Commit reference: full/short hash", false}, // an item of commits to cherry-pick
		{"target", "Target branch or commit to compare with", true},
		{"object", "Git object to show (commit hash, branch, tag, tree, or blob).", true},
		{"message", "Commit message.", false},
		{"commitMessage", "", false},
		{"target", "Target language", false},
	} {
		got := RevisionValues(c.name, c.desc)
		if (len(got) > 0) != c.want || (c.want && got[0] != "HEAD") {
			t.Errorf("RevisionValues(%q, %q) = %q, want a revision: %v", c.name, c.desc, got, c.want)
		}
	}
}

// TestRepoPathIsProjectDir: a repository's path is the canary project,
// also for a tool that creates (a branch, in it), and a revision is HEAD
// before what the description quotes.
func TestRepoPathIsProjectDir(t *testing.T) {
	c := DefaultCanary()
	schema := json.RawMessage(`{"type":"object","properties":{
		"repo_path":{"type":"string","description":"Path to Git repository"},
		"branch_name":{"type":"string"},
		"start_point":{"type":"string","description":"Must not start with \"-\"; a commit hash or branch"}},
		"required":["repo_path","branch_name","start_point"]}`)
	got, err := SynthesizeIn(c, "git_create_branch", schema)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m["repo_path"] != c.Dir || m["start_point"] != "HEAD" {
		t.Errorf("synthesized %s, want repo_path %s and start_point HEAD", got, c.Dir)
	}
}
