package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// DiskBoundExceeded is raised when the server's writes passed the disk
// bound and the runner stopped it.
const DiskBoundExceeded = "disk-bound-exceeded"

func diskRule() Rule {
	return Rule{ID: DiskBoundExceeded, Severity: report.SeverityError,
		Rationale: "The server's writes passed the disk bound (--disk), so the runner stopped it: a server that can fill the disk it runs on can take down its host, and what it would have done after was not seen, so no verdict can clear it."}
}

// disk raises disk-bound-exceeded, a finding on the server (no tool).
func disk(r *report.Report) []report.Finding {
	if !r.Sandbox.DiskExceeded {
		return nil
	}
	rl := diskRule()
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("the server's writes passed %d bytes; %s", r.Sandbox.DiskLimit, rl.Rationale),
		Evidence: []string{fmt.Sprintf("disk bound %d bytes", r.Sandbox.DiskLimit)}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation}}
}
