package report_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func call(seq int, tool, source string, mod func(*report.Call)) report.Call {
	c := report.Call{Seq: seq, Tool: tool, Source: source, Arguments: json.RawMessage(`{}`), Effects: report.NewEffects()}
	if mod != nil {
		mod(&c)
	}
	return c
}

func isError(text string) func(*report.Call) {
	return func(c *report.Call) { c.IsError, c.Result = true, text }
}

// TestCoverageCountsWhatExercises: a tool is exercised by a call that
// returned a result that is not an error, from a probe, synthesized or
// empty arguments (a late tool's too); repeats and negatives never count;
// an errored tool quotes its first counted failure, one line, bounded,
// control characters escaped; a tool not called says why.
func TestCoverageCountsWhatExercises(t *testing.T) {
	r := report.New()
	r.Complete = true
	for _, n := range []string{"ok", "flaky", "only_negative", "rpc", "late", "skipped", "refused", "long"} {
		r.Tools = append(r.Tools, report.Tool{Name: n})
	}
	r.Calls = []report.Call{
		call(1, "ok", "probe", isError("first try failed")),
		call(2, "ok", "synth", nil),
		call(3, "ok", "repeat", isError("repeat failed")),
		call(4, "flaky", "empty", isError("boom\x1b[2J\r\nsecond line")),
		call(5, "flaky", "repeat", nil), // a repeat that succeeds does not count
		call(6, "only_negative", "negative", nil),
		call(7, "rpc", "synth", func(c *report.Call) { c.Error, c.ErrorKind = "invalid params", "rpc" }),
		call(8, "late", "synth", func(c *report.Call) { c.Late = true }),
		call(9, "refused", "synth", func(c *report.Call) { c.Error, c.ErrorKind = "result over --max-message", "client" }),
		call(10, "long", "synth", isError(strings.Repeat("é", 400))),
	}
	r.NotCalled = []report.NotCalled{{Tool: "skipped", Reason: "no valid input: required x"}}
	r.Finish()
	got := map[string]report.ToolCoverage{}
	for _, c := range r.Coverage {
		got[c.Tool] = c
	}
	want := map[string]report.ToolCoverage{
		"ok":            {Tool: "ok", Status: report.CoverageExercised, Calls: 2, Exercising: 1},
		"flaky":         {Tool: "flaky", Status: report.CoverageErrored, Calls: 1, Call: 4, Reason: `isError: boom\x1b[2J second line`},
		"only_negative": {Tool: "only_negative", Status: report.CoverageNotCalled, Reason: "no call was made"},
		"rpc":           {Tool: "rpc", Status: report.CoverageErrored, Calls: 1, Call: 7, Reason: "rpc: invalid params"},
		"late":          {Tool: "late", Status: report.CoverageExercised, Calls: 1, Exercising: 1},
		"skipped":       {Tool: "skipped", Status: report.CoverageNotCalled, Reason: "no valid input: required x"},
		"refused":       {Tool: "refused", Status: report.CoverageErrored, Calls: 1, Call: 9, Reason: "client: result over --max-message"},
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	long := got["long"].Reason
	if len(long) > report.MaxCoverageReason+len("… (809 bytes)") || !strings.HasSuffix(long, "… (809 bytes)") || !strings.HasPrefix(long, "isError: éé") {
		t.Errorf("long reason %q (%d bytes)", long, len(long))
	}
	if r.Summary.Exercised != 2 || r.Summary.Errored != 4 || r.Summary.Tools != 8 {
		t.Errorf("summary %+v", r.Summary)
	}
	if len(r.Coverage) != len(r.Tools) || r.Coverage[0].Tool != "ok" || r.Coverage[7].Tool != "long" {
		t.Errorf("coverage not in the order of tools: %+v", r.Coverage)
	}

	// A scan that ended early says so of the tools it never reached.
	r.Complete = false
	r.NotCalled = nil
	r.Finish()
	if c := r.Coverage[5]; c.Status != report.CoverageNotCalled || c.Reason != "the scan ended before it was called" {
		t.Errorf("incomplete: %+v", c)
	}
	// The statuses marshal to their names and back.
	b, err := json.Marshal(r.Coverage[:3])
	if err != nil || !strings.Contains(string(b), `"status":"exercised"`) || !strings.Contains(string(b), `"status":"errored"`) || !strings.Contains(string(b), `"status":"not-called"`) {
		t.Errorf("marshal: %v %s", err, b)
	}
	var back []report.ToolCoverage
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r.Coverage[:3]) {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain é ✓":            "plain é ✓",
		"a\x1b[2Jb":            `a\x1b[2Jb`,
		"cr\rbel\atab\tnl\n":   `cr\x0dbel\x07tab\x09nl\x0a`,
		"del\x7f c1\u009b31m":  `del\x7f c1\u009b31m`,
		"bidi\u202egnp.exe":    `bidi\u202egnp.exe`,
		"bad\xffbyte":          `bad\xffbyte`,
		"keep \ufffd as it is": "keep \ufffd as it is",
	} {
		if got := report.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := report.PrintableLines("a\x1b\nb\r\n"); got != "a\\x1b\nb\\x0d\n" {
		t.Errorf("PrintableLines: %q", got)
	}
}
