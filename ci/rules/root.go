package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ServerRunsAsRoot is raised when the server ran as uid 0 (`--user 0`).
const ServerRunsAsRoot = "server-runs-as-root"

func serverRunsAsRootRule() Rule {
	return Rule{ID: ServerRunsAsRoot, Severity: report.SeverityError,
		Rationale: "The server ran as root (uid 0) in the sandbox: it could rewrite any file of the image, the agent at /sbin/docker-init included, so what the report says it did is weaker evidence, and it was not run as it should be."}
}

// RunsAsRoot reports whether user, as Docker takes it (UID[:GID] or a
// name), names uid 0.
func RunsAsRoot(user string) bool {
	uid, _, _ := strings.Cut(user, ":")
	if uid == "root" {
		return true
	}
	n, err := strconv.ParseUint(uid, 10, 32)
	return err == nil && n == 0
}

// runsAsRoot raises server-runs-as-root, a finding on the server (no
// tool), when the sandbox ran it as root.
func runsAsRoot(r *report.Report) []report.Finding {
	if !RunsAsRoot(r.Sandbox.User) {
		return nil
	}
	rl := serverRunsAsRootRule()
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("the server ran as user %s; %s", r.Sandbox.User, rl.Rationale),
		Evidence: []string{"user " + r.Sandbox.User}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation}}
}
