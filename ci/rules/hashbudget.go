package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// HashBudgetExceeded is raised when snapshots left files uncompared by
// content (the hash budget, or the run's deadline, ran out).
const HashBudgetExceeded = "hash-budget-exceeded"

func hashBudgetRule() Rule {
	return Rule{ID: HashBudgetExceeded, Severity: report.SeverityError,
		Rationale: "A snapshot's hash budget (--hash-budget) or the run's --timeout ran out before every file it had to compare by content was read: a change to those files may be missing, so no verdict can clear them."}
}

// hashBudget raises hash-budget-exceeded, a finding on the server (no
// tool), from the count the snapshots left unhashed.
func hashBudget(r *report.Report) []report.Finding {
	n := r.Sandbox.FilesUnhashed
	if n == 0 {
		return nil
	}
	rl := hashBudgetRule()
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("%d file(s) were not compared by content; %s", n, rl.Rationale),
		Evidence: []string{fmt.Sprintf("%d files unhashed", n)}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation}}
}
