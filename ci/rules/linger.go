package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// LingerBound is raised when the linger after the last call, or a
// replay's leg, reached its cap (--linger-max) with something the calls
// set off still able to act.
const LingerBound = "linger-bound"

func lingerRule() Rule {
	return Rule{ID: LingerBound, Severity: report.SeverityError,
		Rationale: "Something the calls set off (a timer, a sleeping thread, a process left running) could still act past the linger's cap (--linger-max): what it does then is not seen, so no verdict can clear it. A server can wait out any window; raise --linger-max to watch longer."}
}

// lingerBound raises linger-bound, a finding on the server (no tool), its
// evidence the linger-bound problems.
func lingerBound(r *report.Report) []report.Finding {
	rl := lingerRule()
	return problemFinding(r, report.ProblemLingerBound, rl, fmt.Sprintf("something the calls set off could still act past --linger-max %dms; %s", r.Sandbox.LingerMaxMs, rl.Rationale),
		func(p report.Problem) string { return fmt.Sprintf("after call %d: %s", p.Call, p.Message) })
}

// problemFinding is rl's finding on the server (no tool) when r has
// problems of kind, each one line of evidence (evidence of it); none
// otherwise.
func problemFinding(r *report.Report, kind string, rl Rule, msg string, evidence func(report.Problem) string) []report.Finding {
	var ev, paths []string
	for _, p := range r.Problems {
		if p.Kind == kind {
			ev, paths = append(ev, evidence(p)), append(paths, "")
		}
	}
	if len(ev) == 0 {
		return nil
	}
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: msg, Evidence: ev, EvidencePaths: paths, Isolation: r.Sandbox.Isolation}}
}
