package report

import "testing"

func TestResultFailure(t *testing.T) {
	for _, c := range []struct {
		text       string
		structured any
		want       string
	}{
		{`{"content":[{"type":"text","text":"boom"}],"isError":true}`, nil, FailsByNestedIsError},
		{`{"isError": true, "message": "x"}`, nil, FailsByNestedIsError},
		{`{"success": false, "message": "nope"}`, nil, FailsBySuccessFalse},
		{`{"ok": false}`, nil, FailsBySuccessFalse},
		{`{"status": "error", "detail": "x"}`, nil, FailsBySuccessFalse},
		{`{"error": "File does not exist"}`, nil, FailsByErrorField},
		{`{"error": {"code": 1}}`, nil, FailsByErrorField},
		{"Error: File does not exist", nil, FailsByErrorText},
		{"Error executing tool read: EACCES", nil, FailsByErrorText},
		{"Failed to read the file", nil, FailsByErrorText},
		{"MCP error -32602: Invalid arguments", nil, FailsByErrorText},
		{"  Traceback (most recent call last):\n  File x", nil, FailsByErrorText},
		{"", map[string]any{"success": false}, FailsBySuccessFalse},
		// Content, not a failure.
		{`{"success": true, "error": "none"}`, nil, ""},
		{`{"isError": false, "content": []}`, nil, ""},
		{`{"id": 1, "name": "a", "status": "open", "error": "x", "owner": "b"}`, nil, ""},
		{"The error was fixed in 2.1", nil, ""},
		{"Errors: 0", nil, ""},
		{"Error: a log line\n\nand more of the file\n", nil, ""},
		{"error-handling.md", nil, ""},
		{`{"error": ""}`, nil, ""},
		{"ok", map[string]any{"items": []any{}}, ""},
	} {
		if got := ResultFailure(c.text, c.structured); got != c.want {
			t.Errorf("%q %v: %q, want %q", c.text, c.structured, got, c.want)
		}
	}
}
