package rules

import (
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ToolListTruncated is raised when the tool list was cut at one of the
// runner's bounds on what the server sends.
const ToolListTruncated = "tool-list-truncated"

func toolListRule() Rule {
	return Rule{ID: ToolListTruncated, Severity: report.SeverityError,
		Rationale: "The server's tool list broke one of the runner's bounds (pages, bytes, tools, a message over the size or nesting bound, a schema over the schema bound): the tools past it were neither called nor judged, so no verdict can clear them."}
}

// toolListCut raises tool-list-truncated, a finding on the server (no tool),
// when the report says the list was cut; the protocol-bound problems say
// where.
func toolListCut(r *report.Report) []report.Finding {
	if !r.Server.ToolListTruncated {
		return nil
	}
	rl := toolListRule()
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: "the tool list was cut at a bound; " + rl.Rationale,
		Evidence: []string{"tool list truncated"}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation}}
}
