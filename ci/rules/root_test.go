package rules

import (
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestRunsAsRoot(t *testing.T) {
	for user, want := range map[string]bool{"0": true, "0:0": true, "00:10001": true, "root": true, "root:root": true,
		"10001:10001": false, "10001:0": false, "1000": false, "": false, "x": false} {
		if RunsAsRoot(user) != want {
			t.Errorf("RunsAsRoot(%q) = %v", user, !want)
		}
	}
}

// TestServerRunsAsRoot: a server run as uid 0 is a server-level finding
// (no tool) at error; the sandbox user is none; the policy can turn it off.
func TestServerRunsAsRoot(t *testing.T) {
	r := report.New()
	r.Sandbox = report.Sandbox{User: "10001:10001", Isolation: "session"}
	if f := Evaluate(r, Options{}); len(f) != 0 {
		t.Fatalf("sandbox user: %+v", f)
	}
	r.Sandbox.User = "0"
	f := Evaluate(r, Options{})
	if len(f) != 1 || f[0].Rule != ServerRunsAsRoot || f[0].Tool != "" || f[0].Call != 0 || f[0].Severity != report.SeverityError ||
		len(f[0].Evidence) != 1 || f[0].Evidence[0] != "user 0" || len(f[0].EvidencePaths) != 1 {
		t.Fatalf("uid 0: %+v", f)
	}
	kept, ignored := Policy{Rules: map[string]Override{ServerRunsAsRoot: {Off: true}}}.Apply(f)
	if len(kept) != 0 || len(ignored) != 1 {
		t.Errorf("off: kept %+v ignored %+v", kept, ignored)
	}
}
