package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestExitBeforeInitializeSaysWhy: a server that prints why it cannot
// start, floods stderr past the tail and exits is reported with its exit
// code and the line that says why (not "EOF"); the report keeps the start
// of its stderr with the end; a planted value it prints shows as its role.
func TestExitBeforeInitializeSaysWhy(t *testing.T) {
	cli := sandboxtest.Docker(t)
	script := `echo "starting the server" >&2
echo "Error: cannot read the config: key $AWS_SECRET_ACCESS_KEY refused" >&2
i=0; while [ $i -lt 1500 ]; do echo "    at frame $i of a long and useless stack trace" >&2; i=$((i+1)); done
echo "last words" >&2
exit 3`
	res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Argv: []string{"/bin/sh", "-c", script}}})
	var exit *sandbox.ExitBeforeInitialize
	if !errors.Is(err, scan.ErrIncomplete) || !errors.Is(err, sandbox.ErrServerStart) || !errors.As(err, &exit) {
		t.Fatalf("scan: %v, want an ExitBeforeInitialize", err)
	}
	const why = "Error: cannot read the config: key <aws-secret-access-key> refused"
	if exit.Code != 3 || exit.Why != why {
		t.Errorf("exit %+v", *exit)
	}
	r := res.Report
	if msg := "server exited with code 3 before initialize: " + why; len(r.Problems) == 0 || r.Problems[0].Kind != "crash" || r.Problems[0].Message != msg {
		t.Errorf("problems %+v, want crash %q", r.Problems, msg)
	}
	if s := r.Server; !s.StderrTruncated || !strings.HasPrefix(s.StderrHead, "starting the server\n"+why+"\n") || len(s.StderrHead) < 8<<10-64 || len(s.StderrHead) > 8<<10 ||
		!strings.HasSuffix(s.StderrTail, "last words\n") || s.ExitCode == nil || *s.ExitCode != 3 {
		t.Errorf("server: head %q..., tail ...%q, truncated %v, exit %v", s.StderrHead[:min(80, len(s.StderrHead))], s.StderrTail[max(0, len(s.StderrTail)-40):], s.StderrTruncated, s.ExitCode)
	}
}
