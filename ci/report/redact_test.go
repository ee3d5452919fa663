package report_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestRedactReplacesValuesByRoles: every string outside timing, raw JSON
// included, shows roles; a word-bounded value is left alone inside a
// longer word; timing keeps its own.
func TestRedactReplacesValuesByRoles(t *testing.T) {
	ps := []report.Placeholder{
		{Value: "cobalt-ledger", Role: "<project>", Word: true},
		{Value: "AKIAABCDEFGHIJKLMNOP", Role: "<aws-access-key-id>"},
		{Value: "jparker", Role: "<git-user>", Word: true},
	}
	r := report.New()
	r.Calls = append(r.Calls, report.Call{Seq: 1, Tool: "read",
		Arguments: json.RawMessage(`{"path":"/workspace/cobalt-ledger/README.md","q":"\ncobalt-ledger","u":"\u000acobalt-ledger","x":"cobalt-ledger2","y":"cobalt-ledger-v2"}`),
		Result:    "# cobalt-ledger\nkey=AKIAABCDEFGHIJKLMNOPQ user jparker2 jparker.",
		Effects:   report.Effects{Files: []report.FileChange{{Path: "/workspace/cobalt-ledger/src/x.js", Change: report.ChangeCreated, Type: "file"}}}})
	r.Timing = &report.Timing{StartedAt: "cobalt-ledger"}
	r.Redact(ps)
	c := r.Calls[0]
	if want := `{"path":"/workspace/<project>/README.md","q":"\n<project>","u":"\u000a<project>","x":"cobalt-ledger2","y":"<project>-v2"}`; string(c.Arguments) != want {
		t.Errorf("arguments %s\nwant      %s", c.Arguments, want)
	}
	if want := "# <project>\nkey=<aws-access-key-id>Q user jparker2 <git-user>."; c.Result != want {
		t.Errorf("result %q\nwant   %q", c.Result, want)
	}
	if c.Effects.Files[0].Path != "/workspace/<project>/src/x.js" {
		t.Errorf("path %q", c.Effects.Files[0].Path)
	}
	if r.Timing.StartedAt != "cobalt-ledger" {
		t.Error("timing was redacted")
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Errorf("not JSON after redaction:\n%s", buf.Bytes())
	}
}

// TestRedactMatchesAnyCase: the scan finds a value in any ASCII case (a
// DNS name is lower-cased), so the report shows none: exact matches keep
// their encoding's role, others take the first role in length order.
func TestRedactMatchesAnyCase(t *testing.T) {
	ps := []report.Placeholder{
		{Value: "core-ledger-api", Role: "<project>", Word: true},
		{Value: "AKIAABCDEFGHIJKLMNOP", Role: "<aws-access-key-id>"},
		{Value: "414b4941", Role: "<x:hex>"},
		{Value: "414B4941", Role: "<x:HEX>"},
	}
	got := report.RedactString("akiaabcdefghijklmnop.evil.example CORE-Ledger-API 414B4941 414b4941 414B4941q ok\xff", ps)
	if want := "<aws-access-key-id>.evil.example <project> <x:HEX> <x:hex> <x:HEX>q ok\xff"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
