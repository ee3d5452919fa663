package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

// TestUserRootWarnsAndFails: --user 0 says on stderr that the server runs
// as root and passes the user on; a report whose sandbox ran as it gets a
// server-level finding that fails the default gate. No engine: that the
// server does run as uid 0 and the report records the user is the
// session's (sandbox's TestServerRunsAsTheSandboxUser).
func TestUserRootWarnsAndFails(t *testing.T) {
	so, stderr := sessionOptions(t, flagUser, "--user", "0")
	if so.User != "0" || !strings.Contains(stderr, "warning: --user 0 runs the server as root") {
		t.Fatalf("user %q, stderr %q; want 0 and a warning", so.User, stderr)
	}
	if _, stderr := sessionOptions(t, flagUser); stderr != "" {
		t.Errorf("the default user warns: %q", stderr)
	}

	r := report.New()
	r.Sandbox.User = so.User
	verdict.Finish(r, verdict.Config{})
	var found bool
	for _, f := range r.Findings {
		found = found || (f.Rule == rules.ServerRunsAsRoot && f.Tool == "" && f.Severity == report.SeverityError)
	}
	if !found {
		t.Errorf("findings %+v lack %s", r.Findings, rules.ServerRunsAsRoot)
	}
	if !verdict.Fails(r, verdict.FailOn{Severity: report.SeverityError}) { // --fail-on's default
		t.Errorf("the default gate passes a server run as root: %+v", r.Findings)
	}
}

func readReport(t *testing.T, path string) report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
