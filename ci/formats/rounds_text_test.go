package formats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestTextNamesRounds: with --rounds N, a finding not every round saw
// names its rounds, a problem its round, and the summary the unstable
// count; a single round's text says nothing of rounds.
func TestTextNamesRounds(t *testing.T) {
	r := report.New()
	r.Rounds = &report.Rounds{Run: 3}
	r.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Call: 1, Message: "m", Evidence: []string{"created /tmp/a"}, Rounds: []int{1, 2, 3}},
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "b", Call: 2, Message: "m", Evidence: []string{"created /tmp/b"}, Rounds: []int{1, 3}},
	}
	for i := range r.Findings {
		r.Findings[i].Fingerprint = report.Fingerprint(r.Findings[i])
	}
	r.Problems = []report.Problem{{Kind: "timeout", Call: 2, Message: "call 2 timed out", Round: 3}}
	r.Finish()
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(rounds 1,3 of 3)", "timeout (call 2) (round 3): call 2 timed out", "3 rounds: 1 finding(s) not seen in every round"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	one := report.New()
	one.Findings = []report.Finding{{Rule: "readonly-writes", Tool: "a", Call: 1, Message: "m"}}
	one.Finish()
	b.Reset()
	if err := WriteText(&b, one); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "round") {
		t.Errorf("a single round's text names rounds:\n%s", b.String())
	}
}
