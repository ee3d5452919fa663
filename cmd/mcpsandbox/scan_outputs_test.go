package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanChecksOutputsFirst: an output that cannot be written is exit 2
// with one line before anything starts (no engine is asked), not a
// report lost after the scan.
func TestScanChecksOutputsFirst(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--out", filepath.Join(dir, "missing", "r.json")}, "the json report: cannot write"},
		{[]string{"--report", "sarif=" + dir}, "is a directory"},
		{[]string{"--transcript", filepath.Join(dir, "no", "t.jsonl")}, "--transcript: cannot write"},
		{[]string{"--timings", filepath.Join(dir, "no", "t.json")}, "--timings: cannot write"},
		{[]string{"--write-baseline", filepath.Join(dir, "no", "b.json")}, "--write-baseline: cannot write"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"scan", "--format", "json"}, c.args...), "--", "node", "server.js")
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.says) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line saying %q", c.args, code, stderr.String(), c.says)
		}
	}
}
