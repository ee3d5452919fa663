package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestBulkUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bulk"}, "bulk needs at least one LIST"},
		{[]string{"bulk", "-j", "0", "x"}, "--jobs 0"},
		{[]string{"bulk", "--fail-on", "often", "x"}, "--fail-on"},
		{[]string{"bulk", "--findings-at", "never", "x"}, "--findings-at"},
		{[]string{"bulk", "--results", dir, filepath.Join(dir, "missing.txt")}, "missing.txt"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		if code := exitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d, stderr %q lacks %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestBulkCommandRunsWhatNeedsNoFetch runs the command on inputs none of
// which needs the registry: the malformed line is named with its file
// and line, the rest has a status, the summaries are written, exit 0.
func TestBulkCommandRunsWhatNeedsNoFetch(t *testing.T) {
	sandboxtest.Docker(t)
	dir := t.TempDir()
	list := writeFile(t, dir, "list.txt", "# nothing here needs a fetch\nnot a spec\n")
	cfg := writeFile(t, dir, "mcp.json", `{"mcpServers": {"web": {"url": "https://example.com/mcp"},
		"db": {"command": "npx", "args": ["-y", "db-mcp@1.0.0"], "env": {"DB_PATH": "${input:db}"}}}}`)
	results := filepath.Join(dir, "results")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"bulk", "--agent", sandboxtest.Agent(t), "--results", results, "--cache", filepath.Join(dir, "cache"), list, cfg}, &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), list+":2: ") {
		t.Errorf("stderr does not name the malformed line: %s", errb.String())
	}
	b, err := os.ReadFile(filepath.Join(results, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s bulk.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Totals.Packages != 2 || s.Totals.ByStatus["not-scanned-here"] != 1 || s.Totals.ByStatus["needs-config"] != 1 || len(s.Inputs) != 1 {
		t.Errorf("summary totals %+v inputs %+v", s.Totals, s.Inputs)
	}
	for _, f := range []string{"summary.csv", "tools.csv", "summary.md", "state.json"} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestBulkProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &barProgress{w: &buf}
	p.Start(2)
	p.Done(bulk.Result{Spec: "npm:a@1", Status: bulk.StatusOK}, 1, 2, time.Minute)
	if out := buf.String(); !strings.Contains(out, "[1/2, 60/h, ETA 1m0s] npm:a@1: ok\n") || !strings.Contains(out, "(0/2)") {
		t.Errorf("progress output %q", out)
	}
}

func TestBulkShardK8sAndMergeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bulk", "--shard", "2/2", "x"}, "--shard"},
		{[]string{"bulk", "merge"}, "at least one results DIR"},
		{[]string{"bulk", "merge", "--results", t.TempDir(), t.TempDir()}, "not a results directory"},
		{[]string{"bulk", "k8s", "--image", "i", "--shards", "0", "--lists", "l", "--list", "a", "--results-claim", "r"}, "shards 0"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		if code := exitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d, stderr %q lacks %q", tc.args, code, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"bulk", "k8s", "--image", "reg.example/mcpsandbox-bulk:1", "--shards", "4", "--lists", "lists",
		"--list", "npm.txt", "--results-claim", "results", "--", "-j", "2"}, &out, &errb)
	if err != nil || !strings.Contains(out.String(), `completionMode: "Indexed"`) || !strings.Contains(out.String(), `"$(MCPSANDBOX_SHARD_INDEX)/4"`) {
		t.Errorf("bulk k8s: %v %s\n%s", err, errb.String(), out.String())
	}
}
