package probes

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestPlanSetupFirst: setup tools come before the tools that read their
// state, read-only before additive before the rest, those that remove
// (delete_all) last of the rest, and the order is the same every time.
func TestPlanSetupFirst(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []Tool{
		{Name: "delete_all", InputSchema: obj},
		{Name: "use_session", InputSchema: obj},
		{Name: "read_thing", InputSchema: obj, ReadOnly: true},
		{Name: "add_thing", InputSchema: obj, NonDestructive: true},
		{Name: "create_session", InputSchema: obj},
		{Name: "setWorkingDir", InputSchema: obj},
		{Name: "settings", InputSchema: obj, ReadOnly: true}, // "settings" is no "set"
		{Name: "init_wipe", InputSchema: obj, Destructive: true},
	}
	want := []string{"setWorkingDir", "create_session", "read_thing", "settings", "add_thing", "use_session", "init_wipe", "delete_all"}
	for i := 0; i < 3; i++ {
		calls, _, _ := Plan(tools, nil, DefaultCanary())
		var got []string
		for _, c := range calls {
			got = append(got, c.Tool)
			if c.Setup != IsSetup(c.Tool, nil) {
				t.Errorf("%s: Setup %v", c.Tool, c.Setup)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	}
}

// TestPlanSetupAfterPrefix: a namespace most tools share ("git_") hides
// no setup or teardown verb; the setup tool that chooses the working
// directory comes before the one that makes a repository there, and the
// tool that clears the directory comes last; a shared first word that is
// a verb is no namespace for the tools that do not share it.
func TestPlanSetupAfterPrefix(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []Tool{
		{Name: "git_add", InputSchema: obj},
		{Name: "git_clear_working_dir", InputSchema: obj},
		{Name: "git_init", InputSchema: obj},
		{Name: "git_log", InputSchema: obj, ReadOnly: true},
		{Name: "git_set_working_dir", InputSchema: obj},
		{Name: "git_status", InputSchema: obj, ReadOnly: true},
		{Name: "gitReset", InputSchema: obj, Destructive: true},
		{Name: "help", InputSchema: obj, ReadOnly: true},
	}
	want := []string{"git_set_working_dir", "git_init", "git_log", "git_status", "help", "git_add", "gitReset", "git_clear_working_dir"}
	wantSetup := map[string]bool{"git_set_working_dir": true, "git_init": true}
	for i := 0; i < 3; i++ {
		calls, _, _ := Plan(tools, nil, DefaultCanary())
		var got []string
		for _, c := range calls {
			got = append(got, c.Tool)
			if c.Setup != wantSetup[c.Tool] {
				t.Errorf("%s: Setup %v", c.Tool, c.Setup)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	}
}

// TestPlanSetupKeepsListing: setup tools that choose no place keep their
// listing order (open_nodes reads what create_entities made).
func TestPlanSetupKeepsListing(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []Tool{{Name: "create_entities", InputSchema: obj}, {Name: "read_graph", InputSchema: obj, ReadOnly: true}, {Name: "open_nodes", InputSchema: obj}}
	calls, _, _ := Plan(tools, nil, DefaultCanary())
	var got []string
	for _, c := range calls {
		got = append(got, c.Tool)
	}
	if want := []string{"create_entities", "open_nodes", "read_graph"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}

func TestServerPrefix(t *testing.T) {
	for _, tc := range []struct {
		tools []string
		want  []string
	}{
		{[]string{"git_status", "git_log", "git_set_working_dir"}, []string{"git"}},
		{[]string{"mcp_git_status", "mcp_git_log", "mcp_git_add", "mcp_version"}, []string{"mcp", "git"}},
		{[]string{"create_issue", "create_pr", "list_issues", "get_issue"}, nil}, // half is not most
		{[]string{"status"}, nil},
		{[]string{"git", "git_log"}, nil}, // a prefix needs two tools that go on after it
		{nil, nil},
	} {
		if got := ServerPrefix(tc.tools); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ServerPrefix(%q) = %q, want %q", tc.tools, got, tc.want)
		}
	}
	// Words after the prefix are read besides the first, never instead.
	if !IsSetup("set_a", []string{"set"}) || !IsSetup("git_open_repo", []string{"git"}) || IsSetup("git_log_open", []string{"git"}) {
		t.Error("IsSetup does not read the first word and the word after the prefix")
	}
	if IsTeardown("git_open_close", []string{"git"}) || !IsTeardown("disconnect", nil) {
		t.Error("IsTeardown")
	}
	for tool, want := range map[string]bool{"git_set_working_dir": true, "openProject": true, "create_directory": false, "open_nodes": false, "init_repo": false} {
		if got := IsPlaceSetup(tool, []string{"git"}); got != want {
			t.Errorf("IsPlaceSetup(%q) = %v", tool, got)
		}
	}
}

func TestHarvestAndOffer(t *testing.T) {
	var st State
	st.Harvest(1, "create_session", "Created session. Session ID: s-42", nil)
	st.Harvest(2, "start_process", `{"pid": 4242, "name": "worker"}`, nil)
	st.Harvest(3, "open_doc", "opened", map[string]any{"document": map[string]any{"docId": "d-7"}})
	st.Harvest(4, "noise", "the value is invalid: 3; id 9", nil) // no separator: nothing
	schema := json.RawMessage(`{"type":"object","properties":{
		"sessionId":{"type":"string"},"pid":{"type":"integer"},"docId":{"type":"string"},"text":{"type":"string"}},
		"required":["sessionId","pid","docId","text"]}`)
	args := json.RawMessage(`{"docId":"example","pid":1,"sessionId":"example","text":"example"}`)
	got, from := st.Offer(schema, args)
	var m map[string]any
	json.Unmarshal(got, &m)
	if m["sessionId"] != "s-42" || m["pid"] != 4242.0 || m["docId"] != "d-7" || m["text"] != "example" {
		t.Errorf("offered %s", got)
	}
	if !reflect.DeepEqual(from, []int{1, 2, 3}) {
		t.Errorf("from %v", from)
	}
	for _, v := range st.Values() {
		if v.From == 4 {
			t.Errorf("kept %+v from a result with no id", v)
		}
	}
	// A value the schema refuses is not offered.
	strict := json.RawMessage(`{"type":"object","properties":{"sessionId":{"type":"string","pattern":"^[0-9]+$"}},"required":["sessionId"]}`)
	if got, from := st.Offer(strict, json.RawMessage(`{"sessionId":"1"}`)); string(got) != `{"sessionId":"1"}` || from != nil {
		t.Errorf("offered %s from %v against the pattern", got, from)
	}
	// An optional property is added only for a value that fits it by name.
	opt := json.RawMessage(`{"type":"object","properties":{"sessionId":{"type":"string"},"id":{"type":"string"}}}`)
	if got, from := st.Offer(opt, json.RawMessage(`{}`)); string(got) != `{"sessionId":"s-42"}` || !reflect.DeepEqual(from, []int{1}) {
		t.Errorf("optional: offered %s from %v", got, from)
	}
	// A UUID in text is an id; a session's id goes to a plain "id" too.
	var st2 State
	st2.Harvest(5, "connect", "connected as 3f2b8c1e-0000-4000-8000-00000000abcd", nil)
	got, _ = st2.Offer(json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`), json.RawMessage(`{"id":"example"}`))
	if string(got) != `{"id":"3f2b8c1e-0000-4000-8000-00000000abcd"}` {
		t.Errorf("offered %s", got)
	}
}

func TestHarvestBounded(t *testing.T) {
	var st State
	big := map[string]any{}
	for i := 0; i < 1000; i++ {
		big["k"+string(rune('a'+i%26))+string(rune('a'+i/26))+"Id"] = "v"
	}
	for seq := 1; seq <= 10; seq++ {
		st.Harvest(seq, "t", "", big)
	}
	if n := len(st.Values()); n > maxStateValues {
		t.Errorf("%d values kept", n)
	}
}

func TestRefused(t *testing.T) {
	for _, c := range []struct {
		code    int
		isError bool
		text    string
		want    bool
	}{
		{CodeInvalidParams, false, "", true},
		{-32603, false, "internal", false},
		{-32603, false, "Invalid arguments", true},
		{-32601, false, "Tool x requires task augmentation (taskSupport: 'required')", false},
		{0, true, `Invalid arguments: "date": Expected string, received number`, true},
		{0, true, "field required", true},
		{0, true, "MCP error -32601: Tool x requires task augmentation (taskSupport: 'required')", false},
		{0, true, "MCP error -32602: Invalid arguments for tool x", true},
		{0, true, "ENOENT: no such file", false},
		{0, false, "Invalid", false},
	} {
		if got := Refused(c.code, c.isError, c.text); got != c.want {
			t.Errorf("Refused(%d, %v, %q) = %v", c.code, c.isError, c.text, got)
		}
	}
}

func TestErrorClass(t *testing.T) {
	for text, want := range map[string]string{
		"Invalid Anthropic API key format":                             ErrorAuth,
		"Error: 401 Unauthorized":                                      ErrorAuth,
		"request to https://api.x failed: getaddrinfo ENOTFOUND api.x": ErrorNetwork,
		"fetch failed":                                ErrorNetwork,
		"Error: File does not exist":                  ErrorState,
		"ENOENT: no such file or directory, open 'x'": ErrorState,
		"Expected string, received number":            ErrorArgument,
		"path: Required":                              ErrorArgument,
		"Invalid path: file not found":                ErrorArgument,
		"the weather is fine":                         "",
	} {
		if got := ErrorClass(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
	if Refused(0, true, "Invalid API key format") || !Refused(0, true, "Expected string") || !Refused(CodeInvalidParams, false, "API key") {
		t.Error("Refused does not read the class")
	}
}
