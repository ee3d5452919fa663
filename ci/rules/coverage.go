package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// CoverageLow is raised when fewer tools were exercised than the policy's
// coverage minimum asks for.
const CoverageLow = "coverage-low"

func coverageRule() Rule {
	return Rule{ID: CoverageLow, Severity: report.SeverityError,
		Rationale: "Fewer tools were exercised than the policy asks for: a tool whose calls all failed, or that was not called, did not run the code its hints describe, so no finding about it, and no absence of one, is evidence of anything."}
}

// coverage raises coverage-low, a finding on the server (no tool), when
// min is set (above 0) and the share of listed tools exercised is below
// it. A server that lists no tools has nothing to exercise: no finding.
// The evidence names each tool not exercised and its status, not the
// reason (a timeout's words differ between runs; the report's coverage
// has them).
func coverage(r *report.Report, min float64) []report.Finding {
	if min <= 0 || len(r.Tools) == 0 {
		return nil
	}
	cov := report.Coverage(r)
	exercised, _, _ := report.CoverageCounts(cov)
	if float64(exercised) >= min*float64(len(cov)) {
		return nil
	}
	rl := coverageRule()
	ev := []string{}
	for _, c := range cov {
		if c.Status != report.CoverageExercised {
			ev = append(ev, c.Status.String()+" "+c.Tool)
		}
	}
	ev, paths := distinct(ev, nil)
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity,
		Message: fmt.Sprintf("exercised %d of %d tools (%s), below the policy's minimum of %s; %s",
			exercised, len(cov), Percent(exercised, len(cov)), percentOf(min), rl.Rationale),
		Evidence: ev, EvidencePaths: paths, Isolation: r.Sandbox.Isolation}}
}

// Percent is n of total as a whole percentage, rounded down so that 199
// of 200 never reads 100% ("-" of none).
func Percent(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", n*100/total)
}

func percentOf(f float64) string {
	return fmt.Sprintf("%.4g%%", f*100)
}
