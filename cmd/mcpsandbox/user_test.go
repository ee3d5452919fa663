package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestUserRootWarnsAndFails: --user 0 runs the server as root, says so on
// stderr, records it, and fails the gate with a server-level finding.
func TestUserRootWarnsAndFails(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--user", "0", "--linger", sandboxtest.Linger.String(), "--no-replay",
		"--mount", fx.Source + ":" + fx.Target, "--", fx.Target, "honest"}
	code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "warning: --user 0 runs the server as root") {
		t.Fatalf("exit %d, stderr %q; want 1 and a warning", code, stderr.String())
	}
	r := readReport(t, out)
	if r.Sandbox.User != "0" {
		t.Errorf("sandbox.user %q, want 0", r.Sandbox.User)
	}
	var found bool
	for _, f := range r.Findings {
		found = found || (f.Rule == rules.ServerRunsAsRoot && f.Tool == "" && f.Severity == report.SeverityError)
	}
	if !found {
		t.Errorf("findings %+v lack %s", r.Findings, rules.ServerRunsAsRoot)
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
