package main

import (
	"bytes"
	"context"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBoundFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scan", "--max-depth", "1000", "--", "srv"}, "--max-depth 1000: want 1 to 999"},
		{[]string{"scan", "--max-message", "0", "--", "srv"}, "--max-message 0: want 1 to 1024"},
		{[]string{"scan", "--max-tools", "-1", "--", "srv"}, "--max-tools -1"},
		{[]string{"scan", "--max-schema", "0", "--", "srv"}, "--max-schema 0"},
	} {
		var out, errb bytes.Buffer
		code := exitCode(run(context.Background(), tc.args, &out, &errb), &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestRunnerMemoryLimit: the runner sets its soft memory limit unless
// GOMEMLIMIT says otherwise.
func TestRunnerMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	limitMemory(func(string) string { return "1GiB" })
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want it untouched", got)
	}
	limitMemory(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != runnerMemoryLimit {
		t.Errorf("limit %d, want %d", got, runnerMemoryLimit)
	}
}

// TestToolListCutFailsTheGate: a tool list cut at a bound is a
// protocol-bound problem and a tool-list-truncated finding that fails the
// default gate.
func TestToolListCutFailsTheGate(t *testing.T) {
	probes := writeFile(t, t.TempDir(), "p.json", `[]`)
	code, b, stderr := scanFixture(t, []string{"--probes", probes, "--max-tools", "2"}, "flood", "pages=3", "tools=2", "page-bytes=500")
	r := decode(t, b)
	if code != 1 || !r.Server.ToolListTruncated || len(r.Tools) != 2 {
		t.Fatalf("exit %d, toolListTruncated %v, %d tools; stderr %s", code, r.Server.ToolListTruncated, len(r.Tools), stderr)
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.Rule == "tool-list-truncated"
	}
	if !found {
		t.Errorf("findings %+v, want tool-list-truncated", r.Findings)
	}
}
