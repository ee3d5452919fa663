package rules

import (
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestJournalMissed: changes the teardown's walk found past the journal
// make one server-level finding at error, its evidence the problem.
func TestJournalMissed(t *testing.T) {
	r := report.New()
	r.Sandbox = report.Sandbox{User: "10001:10001", Isolation: "call"}
	r.Problems = []report.Problem{{Kind: report.ProblemLingerBound, Message: "not this one"}}
	for _, f := range Evaluate(r, Options{}) {
		if f.Rule == JournalMissed {
			t.Fatalf("no journal problem: %+v", f)
		}
	}
	r.Problems = append(r.Problems, report.Problem{Kind: report.ProblemJournal, Message: "1 file change(s) ...: /tmp/x"})
	var got []report.Finding
	for _, f := range Evaluate(r, Options{}) {
		if f.Rule == JournalMissed {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Tool != "" || got[0].Severity != report.SeverityError || len(got[0].Evidence) != 1 ||
		got[0].Evidence[0] != "1 file change(s) ...: /tmp/x" || len(got[0].EvidencePaths) != 1 || got[0].Isolation != "call" {
		t.Fatalf("journal problem: %+v", got)
	}
}
