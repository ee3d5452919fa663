package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestPosingResults scans the fixture's posing set: results that say
// they failed without isError (a CallToolResult inside the text, "Error:
// ...", {"success": false}) count as errored, each with how it said so,
// in the report and every format; a call refused by the key's format is
// not retried as an argument error. With the vendor's key asked for by
// name (a client configuration's secret), the honeytoken is of its
// shape: the edit tool passes its check and its closed-world claim is
// caught.
func TestPosingResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flags := []string{"--report", "text=" + filepath.Join(dir, "report.txt"), "--report", "junit=" + filepath.Join(dir, "report.xml")}
	_, b, stderr := scanFixture(t, flags, "posing")
	r := decode(t, b)
	status := map[string]string{}
	for _, c := range r.Coverage {
		status[c.Tool] = c.Status.String() + " " + c.Reason
	}
	for tool, want := range map[string]string{
		"pose_ok":          "exercised",
		"pose_nested":      "errored the result says it failed (nested-iserror)",
		"pose_text":        "errored the result says it failed (error-text): Error: File does not exist",
		"pose_false":       "errored the result says it failed (success-false)",
		"pose_vendor_edit": "errored isError: Invalid Anthropic API key format",
	} {
		if !strings.HasPrefix(status[tool], want) {
			t.Errorf("%s: %q, want %q\n%s", tool, status[tool], want, stderr)
		}
	}
	for _, c := range r.Calls {
		if c.Tool == "pose_vendor_edit" && c.Source == "retry" {
			t.Errorf("an auth error retried as an argument error: call %d", c.Seq)
		}
		if c.Tool == "pose_text" && c.FailsBy != report.FailsByErrorText {
			t.Errorf("call %d: failsBy %q", c.Seq, c.FailsBy)
		}
	}
	text, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	junit, _ := os.ReadFile(filepath.Join(dir, "report.xml"))
	if !bytes.Contains(text, []byte("exercised 1 of 5 tools")) || !bytes.Contains(junit, []byte("exercised 1 of 5 tools")) {
		t.Errorf("the formats do not say 1 of 5:\n%s", text)
	}

	// The same fixture from a client's configuration that leaves the key
	// to the user: its honeytoken has the vendor's shape.
	cfg := filepath.Join(dir, "mcp.json")
	fx := sandboxtest.Fixture(t)
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"fx": {"command": "`+fx.Target+`", "args": ["posing"], "env": {"ANTHROPIC_API_KEY": "${input:key}"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "vendor.json")
	var so, se bytes.Buffer
	code := exitCode(run(context.Background(), []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--mount", fx.Source + ":" + fx.Target,
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--from-config", cfg}, &so, &se), &se)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	r = decode(t, b)
	var rules []string
	for _, f := range r.Findings {
		rules = append(rules, f.Rule+" "+f.Tool)
	}
	if code != 1 || !slices.Contains(rules, "closed-world-network pose_vendor_edit") {
		t.Errorf("exit %d, findings %q\n%s", code, rules, se.String())
	}
}

// TestDirectorySearchBoundary: a search tool's path, a directory only by
// its description, is probed as a directory out of the project; its
// listing of the marker's directory is a path-escape finding.
func TestDirectorySearchBoundary(t *testing.T) {
	t.Parallel()
	_, b, stderr := scanFixture(t, []string{"--no-boundary=false"}, "dirsearch")
	r := decode(t, b)
	var kinds, rules []string
	for _, c := range r.Calls {
		if c.Boundary != nil {
			kinds = append(kinds, c.Boundary.Kind)
		}
	}
	for _, f := range r.Findings {
		rules = append(rules, f.Rule+" "+f.Tool)
	}
	if !slices.Contains(kinds, "path-dir") || slices.Contains(kinds, "path-file") || !slices.Contains(rules, "path-escape search_dir") {
		t.Errorf("boundary kinds %q, findings %q\n%s", kinds, rules, stderr)
	}
}

// TestEmptySchemaLearnt: a tool whose published schema is empty, and
// whose error names the fields it wants (zod's issues), is retried with
// them and exercised.
func TestEmptySchemaLearnt(t *testing.T) {
	t.Parallel()
	_, b, stderr := scanFixture(t, nil, "learn")
	r := decode(t, b)
	if len(r.Coverage) != 1 || r.Coverage[0].Status != report.CoverageExercised {
		t.Fatalf("coverage %+v\n%s", r.Coverage, stderr)
	}
	var retried bool
	for _, c := range r.Calls {
		if c.Source == "retry" && strings.Contains(string(c.Arguments), `"query"`) && strings.Contains(string(c.Arguments), `"path"`) {
			retried = true
		}
	}
	if !retried {
		t.Errorf("no retry with the fields the error names: %+v", r.Calls)
	}
}

// TestAdditiveJSONStore: a JSON-lines store rewritten whole with a value
// added is additive (no finding on store_add, though a line changed);
// with a value removed, a nondestructive-deletes finding on store_forget.
func TestAdditiveJSONStore(t *testing.T) {
	t.Parallel()
	_, b, stderr := scanFixture(t, nil, "store")
	r := decode(t, b)
	var rules []string
	for _, f := range r.Findings {
		rules = append(rules, f.Rule+" "+f.Tool)
	}
	if !slices.Contains(rules, "nondestructive-deletes store_forget") || slices.Contains(rules, "nondestructive-deletes store_add") {
		t.Errorf("findings %q\n%s", rules, stderr)
	}
	var kept bool
	for _, c := range r.Calls {
		for _, f := range c.Effects.Files {
			if c.Tool == "store_add" && strings.HasSuffix(f.Path, "memory.jsonl") && f.ContentKept {
				kept = true
			}
		}
	}
	if !kept {
		t.Errorf("store_add's rewrite is not contentKept: %+v", r.Calls)
	}
}
