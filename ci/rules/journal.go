package rules

import (
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// JournalMissed is raised when the teardown's walk found file changes
// the change journal did not tell the snapshots (docs/effects.md "The
// change journal").
const JournalMissed = "journal-missed"

func journalRule() Rule {
	return Rule{ID: JournalMissed, Severity: report.SeverityError,
		Rationale: "The teardown's walk of the layers found file changes the change journal did not tell: the stretch (the call) they were made in is not known, so no verdict can clear the tools."}
}

// journalMissed raises journal-missed, a finding on the server (no tool),
// its evidence the journal problems.
func journalMissed(r *report.Report) []report.Finding {
	rl := journalRule()
	return problemFinding(r, report.ProblemJournal, rl, "file changes were found that the change journal did not tell; "+rl.Rationale,
		func(p report.Problem) string { return p.Message })
}
