package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
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
		{[]string{"scan", "--max-report", "0", "--", "srv"}, "--max-report"},
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
	t.Parallel()
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

// TestReportBoundFailsTheGate: a report over a tiny --max-report sheds
// the result texts and then the arguments of five echoes of 3,000
// bytes, no further; each call keeps the size and SHA-256 of its result,
// its arguments theirs; the report comes within the bound (outside
// timing), valid against the schema, with a report-bound problem and a
// report-truncated finding that fails the default gate.
func TestReportBoundFailsTheGate(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("x", 3000)
	probes := writeFile(t, t.TempDir(), "p.json", fmt.Sprintf(`[{"tool":"echo","arguments":{"text":%q},"repeat":4}]`, text))
	const bound = 16 << 10
	code, b, stderr := scanFixture(t, []string{"--probes", probes, "--max-report", "16KiB"}, "honest")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	if err := reporttest.Validate(b); err != nil {
		t.Fatal(err)
	}
	r := decode(t, b)
	r.Timing = nil
	if size, err := report.JSONSize(&r); err != nil || size > bound {
		t.Fatalf("report of %d bytes outside timing over --max-report %d (err %v)", size, bound, err)
	}
	if r.Sandbox.MaxReport != bound || r.Sandbox.ReportShed <= 0 {
		t.Fatalf("sandbox %+v", r.Sandbox)
	}
	echoes := 0
	for _, c := range r.Calls {
		if c.Result != "" {
			t.Errorf("call %d kept its result %q", c.Seq, c.Result)
		}
		if c.Tool != "echo" {
			continue
		}
		echoes++
		var args map[string]string
		if err := json.Unmarshal(c.Arguments, &args); err != nil || !strings.Contains(args["$comment"], "(3011 bytes, sha256 ") {
			t.Errorf("call %d arguments %s", c.Seq, c.Arguments)
		}
		if c.ResultBytes < 3000 || len(c.ResultSha256) != 64 {
			t.Errorf("call %d: resultBytes %d, resultSha256 %q", c.Seq, c.ResultBytes, c.ResultSha256)
		}
	}
	if echoes != 5 {
		t.Fatalf("%d echoes, want 5: %+v", echoes, r.Calls)
	}
	var msg string
	for _, p := range r.Problems {
		if p.Kind == "report-bound" {
			msg = p.Message
		}
	}
	if !strings.Contains(msg, "call results") || !strings.Contains(msg, "call arguments") || strings.Contains(msg, "effect lists") {
		t.Errorf("report-bound problem %q", msg)
	}
	found := false
	for _, f := range r.Findings {
		found = found || (f.Rule == "report-truncated" && f.Severity == report.SeverityError)
	}
	if !found {
		t.Errorf("findings %+v, want report-truncated", r.Findings)
	}
}
