package probes

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLearnedFields(t *testing.T) {
	for text, want := range map[string]string{
		`[{"code":"invalid_type","expected":"string","received":"undefined","path":["query"],"message":"Required"},{"code":"invalid_type","path":["path"],"message":"Required"}]`: "query path",
		"1 validation error for Args\nurl\n  Field required [type=missing, input_value={}, input_type=dict]":                                                                      "url",
		"'owner' is a required property":           "owner",
		"Error: repo is required":                  "repo",
		"Missing required parameters: owner, repo": "owner repo",
		"Missing required argument: `branch`":      "branch",
		"the weather is fine":                      "",
	} {
		if got := strings.Join(LearnedFields(text), " "); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

func TestLearnIn(t *testing.T) {
	c := NewBait(1).Canary
	b, ok := LearnIn(c, "read_note", json.RawMessage(`{"type":"object"}`), json.RawMessage(`{}`),
		`[{"path":["query"],"message":"Required"},{"path":["path"],"message":"Required"}]`)
	var m map[string]any
	if !ok || json.Unmarshal(b, &m) != nil || m["path"] != c.Text || m["query"] == "" || m["query"] == nil {
		t.Errorf("%s %v", b, ok)
	}
	if _, ok := LearnIn(c, "search", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`), json.RawMessage(`{}`), "query is required"); ok {
		t.Error("learnt over a schema that names its properties")
	}
}
