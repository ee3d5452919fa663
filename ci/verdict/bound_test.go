package verdict_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

// bigReport is the sample report with n more calls of the read-only
// tool, each with a result kept whole and large arguments.
func bigReport(n, resultLen, argLen int) *report.Report {
	r := reporttest.Sample()
	r.Findings = nil
	for i := range n {
		text := strings.Repeat("r", resultLen)
		sum := sha256.Sum256([]byte(text))
		args := json.RawMessage(fmt.Sprintf(`{"q":%q}`, strings.Repeat("a", argLen)))
		r.Calls = append(r.Calls, report.Call{Seq: 3 + i, Tool: "echo", Arguments: args, Source: "probe", Result: text,
			WholeBytes: int64(len(text)), WholeSha256: hex.EncodeToString(sum[:]), Effects: report.NewEffects()})
	}
	return r
}

func jsonOf(t *testing.T, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func ruleFindings(r *report.Report, id string) []report.Finding {
	var out []report.Finding
	for _, f := range r.Findings {
		if f.Rule == id {
			out = append(out, f)
		}
	}
	return out
}

// TestReportWithinItsBoundIsUntouched: a report under --max-report is
// the verdict's, byte for byte.
func TestReportWithinItsBoundIsUntouched(t *testing.T) {
	a, b := bigReport(20, 1000, 100), bigReport(20, 1000, 100)
	verdict.Finish(a, verdict.Config{})
	if err := verdict.FinishWithin(b, verdict.Config{}, 1<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(jsonOf(t, a), jsonOf(t, b)) || b.Sandbox.ReportShed != 0 {
		t.Fatalf("a report within the bound changed: shed %d", b.Sandbox.ReportShed)
	}
}

// TestReportBoundShedsResultsFirst: over the bound, the result texts go
// first, each call keeping the size and SHA-256 of its result (also the
// ones kept whole); the findings are those of the whole report plus
// report-truncated; the report says what it shed and fits.
func TestReportBoundShedsResultsFirst(t *testing.T) {
	whole := bigReport(50, 2000, 50)
	verdict.Finish(whole, verdict.Config{})
	r := bigReport(50, 2000, 50)
	full, _ := report.JSONSize(whole)
	bound := full - 50*1000 // shedding the results frees about 50*2000
	if err := verdict.FinishWithin(r, verdict.Config{}, bound); err != nil {
		t.Fatal(err)
	}
	size, _ := report.JSONSize(r)
	if size > bound || r.Sandbox.MaxReport != bound || r.Sandbox.ReportShed < full-size-200 || r.Sandbox.ReportShed <= 0 {
		t.Fatalf("size %d, bound %d, sandbox %+v (full %d)", size, bound, r.Sandbox, full)
	}
	for _, c := range r.Calls {
		if c.Result != "" {
			t.Fatalf("call %d kept its result", c.Seq)
		}
		if c.Seq > 2 && (c.ResultBytes != 2000 || len(c.ResultSha256) != 64) {
			t.Fatalf("call %d: resultBytes %d, resultSha256 %q", c.Seq, c.ResultBytes, c.ResultSha256)
		}
		if c.Seq > 2 && !strings.Contains(string(c.Arguments), strings.Repeat("a", 50)) {
			t.Fatalf("call %d lost its arguments, before they had to go", c.Seq)
		}
	}
	var problems []report.Problem
	for _, p := range r.Problems {
		if p.Kind == verdict.ProblemReportBound {
			problems = append(problems, p)
		}
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "call results (52)") || strings.Contains(problems[0].Message, "arguments") {
		t.Fatalf("report-bound problems %+v", problems)
	}
	// The verdict: the whole report's findings, and report-truncated.
	got := ruleFindings(r, rules.ReportTruncated)
	if len(got) != 1 || got[0].Severity != report.SeverityError || got[0].Tool != "" {
		t.Fatalf("report-truncated = %+v", got)
	}
	var others []report.Finding
	for _, f := range r.Findings {
		if f.Rule != rules.ReportTruncated {
			others = append(others, f)
		}
	}
	if !reflect.DeepEqual(others, whole.Findings) {
		t.Fatalf("findings changed by shedding:\n%+v\nwant\n%+v", others, whole.Findings)
	}
	if !verdict.Fails(r, verdict.FailOn{Severity: report.SeverityError}) {
		t.Fatal("a shed report passes the default gate")
	}
	if err := reporttest.Validate(jsonOf(t, r)); err != nil {
		t.Fatal(err)
	}
	// The same report sheds the same way, whatever its timing says.
	again := bigReport(50, 2000, 50)
	again.Timing.DurationMs = 123456789
	verdict.FinishWithin(again, verdict.Config{}, bound)
	again.Timing = r.Timing
	if !bytes.Equal(jsonOf(t, r), jsonOf(t, again)) {
		t.Fatal("the same report shed differently")
	}
	// And it is its own verdict: Finish again changes nothing.
	before := jsonOf(t, r)
	verdict.Finish(r, verdict.Config{})
	if !bytes.Equal(before, jsonOf(t, r)) {
		t.Fatal("Finish on the shed report changed it")
	}
}

// TestReportBoundShedsInOrder: a tighter bound sheds the arguments next
// (replaced by their size and SHA-256, the same arguments alike), then
// the texts, and at last the effect lists, keeping the findings judged
// on the whole effects; a bound nothing can meet is said.
func TestReportBoundShedsInOrder(t *testing.T) {
	r := bigReport(50, 100, 3000)
	r.Calls[3].Arguments = r.Calls[2].Arguments
	full, _ := report.JSONSize(r)
	bound := full - 50*2000
	if err := verdict.FinishWithin(r, verdict.Config{}, bound); err != nil {
		t.Fatal(err)
	}
	if size, _ := report.JSONSize(r); size > bound {
		t.Fatalf("size %d over %d", size, bound)
	}
	a2, a3 := string(r.Calls[2].Arguments), string(r.Calls[3].Arguments)
	if a2 != a3 || !strings.Contains(a2, "3008 bytes, sha256 ") || string(r.Calls[1].Arguments) != `{"text":"<&>"}` {
		t.Fatalf("arguments %s / %s / %s", a2, a3, r.Calls[1].Arguments)
	}
	if len(r.Calls[0].Effects.Files) != 1 {
		t.Fatal("effects shed before their turn")
	}

	// A bound only the last step can approach: the effects go, the
	// findings on them stay.
	r = bigReport(0, 0, 0)
	whole := bigReport(0, 0, 0)
	verdict.Finish(whole, verdict.Config{})
	if err := verdict.FinishWithin(r, verdict.Config{}, 100); err != nil {
		t.Fatal(err)
	}
	if len(r.Calls[0].Effects.Files) != 0 || r.Calls[0].Effects.FilesOmitted != 1 || len(r.Calls[0].Effects.Network) != 0 {
		t.Fatalf("effects %+v", r.Calls[0].Effects)
	}
	if len(ruleFindings(r, "readonly-writes")) != len(ruleFindings(whole, "readonly-writes")) || len(ruleFindings(r, rules.ReportTruncated)) != 1 {
		t.Fatalf("findings after shedding the effects: %+v", r.Findings)
	}
	var msg string
	for _, p := range r.Problems {
		if p.Kind == verdict.ProblemReportBound {
			msg = p.Message
		}
	}
	for _, want := range []string{"call results (2)", "effect lists (2)", "over the bound all the same"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report-bound problem %q does not say %q", msg, want)
		}
	}
	if r.Summary.Problems != len(r.Problems) || r.Summary.Findings != len(r.Findings) {
		t.Errorf("summary %+v: %d problems, %d findings", r.Summary, len(r.Problems), len(r.Findings))
	}
}
