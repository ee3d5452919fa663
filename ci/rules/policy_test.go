package rules

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestPolicyChangesSeveritiesIgnoresAndAllowsAndCountsIt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte(`
rules:
  writes-outside-workspace: error
  readonly-background: "off"
ignore:
  paths: ["/workspace/tests/**"]
  tools: ["debug_*"]
  rules:
    - rule: closed-world-network
      tools: ["metrics"]
allowedHosts: ["*.example.com", "203.0.113.*"]
`), 0o644)
	pol, err := LoadPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true), OpenWorld: b(false)}}
	dbg := report.Tool{Name: "debug_dump", Hints: report.Hints{ReadOnly: b(true)}}
	met := report.Tool{Name: "metrics", Hints: report.Hints{OpenWorld: b(false)}}
	r := scenario(
		call{tool: ro, files: []report.FileChange{{Path: "/workspace/tests/p.ts", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}, wsWrite, tmpWrite},
			procs: []report.Process{{Argv: []string{"x"}, Background: true}}, net: []report.NetEvent{outward, query, {Kind: "dns", Host: "evil.net"}}},
		call{tool: dbg, files: []report.FileChange{wsWrite}},
		call{tool: met, net: []report.NetEvent{{Kind: "dns", Host: "evil.net"}}},
	)
	evaluate(r, pol)
	if got := fired(r); !reflect.DeepEqual(got, []string{"closed-world-network ro", "readonly-writes ro", "writes-outside-workspace ro"}) {
		t.Errorf("fired %q", got)
	}
	for _, f := range r.Findings {
		switch f.Rule {
		case "writes-outside-workspace":
			if f.Severity != report.SeverityError {
				t.Errorf("severity %s, want the policy's error", f.Severity)
			}
		case "readonly-writes":
			if !reflect.DeepEqual(f.Evidence, []string{"created /workspace/a", "created /tmp/x"}) {
				t.Errorf("evidence %q: the ignored path must go, the rest stay", f.Evidence)
			}
			if !strings.Contains(f.Message, "changed 2 file(s)") {
				t.Errorf("message %q: the count must be of the evidence left", f.Message)
			}
		case "closed-world-network":
			if !reflect.DeepEqual(f.Evidence, []string{"dns evil.net"}) {
				t.Errorf("evidence %q: allowed hosts must go", f.Evidence)
			}
		}
	}
	var reasons []string
	for _, ig := range r.Ignored {
		reasons = append(reasons, ig.Rule+" "+ig.Tool+" "+ig.Reason)
	}
	sort.Strings(reasons)
	want := []string{
		"closed-world-network metrics tool metrics (rule closed-world-network)",
		"readonly-background ro rule off",
		"readonly-writes debug_dump tool debug_*",
		"readonly-writes ro path /workspace/tests/**",
	}
	if !reflect.DeepEqual(reasons, want) {
		t.Errorf("ignored %q\nwant %q", reasons, want)
	}
}

func TestPolicyRejectsTypos(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown rule":     "rules: {readonly-write: error}",
		"unknown severity": "rules: {readonly-writes: fatal}",
		"unknown field":    "ignores: {paths: [x]}",
		"not yaml":         "rules: [",
	} {
		p := filepath.Join(dir, "p.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadPolicy(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := filepath.Join(dir, "p.json")
	os.WriteFile(p, []byte(`{"rules": {"readonly-writes": "warning"}, "allowedHosts": ["a.com"]}`), 0o644)
	if pol, err := LoadPolicy(p); err != nil || pol.Rules["readonly-writes"] != (Override{Severity: report.SeverityWarning}) {
		t.Errorf("JSON policy: %v %+v", err, pol)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		g, s string
		ok   bool
	}{
		{"/tmp/*", "/tmp/x", true}, {"/tmp/*", "/tmp/x/y", false}, {"/tmp/**", "/tmp/x/y", true},
		{"*.example.com", "a.example.com", true}, {"*.example.com", "example.com", false}, {"debug_?", "debug_a", true},
	} {
		if glob(c.g, c.s) != c.ok {
			t.Errorf("glob(%q, %q) = %v", c.g, c.s, !c.ok)
		}
	}
}

// TestPolicyIgnoresEveryKindOfFinding: the policy holds for findings the
// rules did not raise (contract drift, stale baseline entries), and a
// rule's ignore that names tools and paths needs both.
func TestPolicyIgnoresEveryKindOfFinding(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte(`
rules: {contract-tool-added: off, baseline-stale: warning}
ignore:
  tools: [legacy]
  rules:
    - rule: readonly-writes
      tools: [ro]
      paths: ["/workspace/**"]
`), 0o644)
	pol, err := LoadPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Rules[ContractToolAdded] != (Override{Off: true}) {
		t.Fatalf("unquoted off = %+v", pol.Rules[ContractToolAdded])
	}
	in := []report.Finding{
		{Rule: ContractToolAdded, Severity: report.SeverityWarning, Tool: "new", Evidence: []string{"annotations: null"}},
		{Rule: BaselineStale, Severity: report.SeverityError, Tool: "legacy", Evidence: []string{"x"}},
		{Rule: BaselineStale, Severity: report.SeverityError, Tool: "other", Evidence: []string{"y"}},
		{Rule: EventsDropped, Severity: report.SeverityError, Evidence: []string{"3 events dropped"}},
		{Rule: ReadonlyWrites, Severity: report.SeverityError, Tool: "ro", Call: 1, Evidence: []string{"created /workspace/a"}, EvidencePaths: []string{"/workspace/a"}},
		{Rule: ReadonlyWrites, Severity: report.SeverityError, Tool: "rw", Call: 2, Evidence: []string{"created /workspace/a"}, EvidencePaths: []string{"/workspace/a"}},
	}
	kept, ignored := pol.Apply(in)
	var got, reasons []string
	for _, f := range kept {
		got = append(got, f.Rule+" "+f.Tool+" "+f.Severity.String())
	}
	for _, ig := range ignored {
		reasons = append(reasons, ig.Rule+" "+ig.Tool+" "+ig.Reason)
	}
	sort.Strings(got)
	sort.Strings(reasons)
	if want := []string{"baseline-stale other warning", "events-dropped  error", "readonly-writes rw error"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept %q\nwant %q", got, want)
	}
	if want := []string{"baseline-stale legacy tool legacy", "contract-tool-added new rule off", "readonly-writes ro path /workspace/** (rule readonly-writes)"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("ignored %q\nwant %q", reasons, want)
	}
}
