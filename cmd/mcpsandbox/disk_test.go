package main

import (
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestDiskBoundFailsTheGate: a read-only tool that writes past --disk is
// stopped; the report says so (a disk problem on the call, a
// server-level disk-bound-exceeded finding at error) and the scan exits
// 1, as for any failing finding, not 2.
func TestDiskBoundFailsTheGate(t *testing.T) {
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, []string{"--probes", writeFile(t, dir, "p.json", `{"fill":{}}`), "--disk", "20MiB", "--disk-interval", "20ms"}, "disk")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	if !r.Sandbox.DiskExceeded || r.Sandbox.DiskLimit != 20<<20 || r.Complete {
		t.Fatalf("sandbox %+v, complete %v", r.Sandbox, r.Complete)
	}
	var stopped bool
	for _, p := range r.Problems {
		stopped = stopped || p.Kind == "disk" && p.Call == 1 && strings.Contains(p.Message, "20971520 bytes (--disk)")
	}
	if !stopped {
		t.Errorf("no disk problem on call 1: %+v", r.Problems)
	}
	var f *report.Finding
	for i := range r.Findings {
		if r.Findings[i].Rule == "disk-bound-exceeded" {
			f = &r.Findings[i]
		}
	}
	if f == nil || f.Severity != report.SeverityError || f.Tool != "" {
		t.Fatalf("disk-bound-exceeded = %+v; findings %+v", f, r.Findings)
	}
}

// TestDiskFlags: --disk takes a size, --disk-interval a duration, and
// nonsense is a usage error (exit 2) before anything runs.
func TestDiskFlags(t *testing.T) {
	for _, args := range [][]string{{"--disk", "0"}, {"--disk", "lots"}, {"--disk-interval", "0s"}} {
		var stdout, stderr strings.Builder
		argv := append(append([]string{"scan"}, args...), "--", "true")
		if code := exitCode(run(t.Context(), argv, &stdout, &stderr), &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2; %s", args, code, stderr.String())
		}
	}
}
