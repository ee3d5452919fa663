package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ReportTruncated is raised when the report was over --max-report and
// shed content to come within it.
const ReportTruncated = "report-truncated"

func reportBoundRule() Rule {
	return Rule{ID: ReportTruncated, Severity: report.SeverityError,
		Rationale: "The report was over its bound (--max-report) and shed content to fit (result texts, then arguments, texts, and at last effect lists; the report-bound problem says which): what a reader or a later verdict needs may be missing, so no verdict can clear the server."}
}

// reportBound raises report-truncated, a finding on the server (no
// tool), when the report shed content.
func reportBound(r *report.Report) []report.Finding {
	if r.Sandbox.ReportShed == 0 {
		return nil
	}
	rl := reportBoundRule()
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: "the report was cut to its bound; " + rl.Rationale,
		Evidence: []string{fmt.Sprintf("report over --max-report %d bytes", r.Sandbox.MaxReport)}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation}}
}
