package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func b(v bool) *bool { return &v }

// scenario: one call per tool, with the effects given.
func scenario(calls ...struct {
	tool  report.Tool
	args  string
	files []report.FileChange
	procs []report.Process
	net   []report.NetEvent
}) *report.Report {
	r := report.New()
	seen := map[string]bool{}
	for i, c := range calls {
		if !seen[c.tool.Name] {
			r.Tools = append(r.Tools, c.tool)
			seen[c.tool.Name] = true
		}
		eff := report.NewEffects()
		eff.Files = append(eff.Files, c.files...)
		eff.Processes = append(eff.Processes, c.procs...)
		eff.Network = append(eff.Network, c.net...)
		args := c.args
		if args == "" {
			args = "{}"
		}
		r.Calls = append(r.Calls, report.Call{Seq: i + 1, Tool: c.tool.Name, Arguments: json.RawMessage(args), Effects: eff})
	}
	return r
}

type call = struct {
	tool  report.Tool
	args  string
	files []report.FileChange
	procs []report.Process
	net   []report.NetEvent
}

// evaluate runs the rules and then the policy, as package verdict does.
func evaluate(r *report.Report, p Policy) {
	r.Findings, r.Ignored = p.Apply(Evaluate(r, Options{AllowedHosts: p.AllowedHosts}))
}

func fired(r *report.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule+" "+f.Tool)
	}
	sort.Strings(out)
	return out
}

var (
	wsWrite  = report.FileChange{Path: "/workspace/a", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}
	tmpWrite = report.FileChange{Path: "/tmp/x", Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "tmp"}
	del      = report.FileChange{Path: "/workspace/seed", Change: report.ChangeDeleted, Type: "file", Scope: "workspace"}
	appended = report.FileChange{Path: "/workspace/log", Change: report.ChangeModified, Type: "file", Scope: "workspace", Appended: true, SHA256: "2"}
	rewrote  = report.FileChange{Path: "/workspace/log", Change: report.ChangeModified, Type: "file", Scope: "workspace", SHA256: "3"}
	outward  = report.NetEvent{Kind: "connect", Address: "203.0.113.7", Port: 443, Protocol: "tcp", Result: "ENETUNREACH"}
	loop     = report.NetEvent{Kind: "connect", Address: "127.0.0.1", Port: 8080, Protocol: "tcp", Result: "ok", Loopback: true}
	query    = report.NetEvent{Kind: "dns", Host: "telemetry.example.com", Result: "nxdomain"}
)

func TestEachRuleFiresWhereItShould(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	nd := report.Tool{Name: "nd", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	idem := report.Tool{Name: "idem", Hints: report.Hints{Idempotent: b(true)}}
	closed := report.Tool{Name: "closed", Hints: report.Hints{OpenWorld: b(false)}}
	r := scenario(
		call{tool: ro, files: []report.FileChange{wsWrite}},
		call{tool: ro, procs: []report.Process{{PID: 3, Argv: []string{"sleep"}, Background: true}}},
		call{tool: nd, files: []report.FileChange{del}},
		call{tool: nd, files: []report.FileChange{appended}}, // additive: fine
		call{tool: idem, args: `{"a":1}`, files: []report.FileChange{{Path: "/workspace/log", Change: report.ChangeModified, Type: "file", SHA256: "1"}}},
		call{tool: idem, args: `{"a":1}`, files: []report.FileChange{{Path: "/workspace/log", Change: report.ChangeModified, Type: "file", SHA256: "1"}}}, // same bytes again: no further effect
		call{tool: idem, args: `{"a":1}`, files: []report.FileChange{rewrote}},
		call{tool: closed, net: []report.NetEvent{loop}},
		call{tool: closed, net: []report.NetEvent{outward, query, query}},
		call{tool: ro, files: []report.FileChange{tmpWrite}},
	)
	evaluate(r, Policy{})
	want := []string{
		"closed-world-network closed", "idempotent-repeats idem", "nondestructive-deletes nd", "readonly-background ro",
		"readonly-writes ro", "readonly-writes ro", "writes-outside-workspace ro",
	}
	if got := fired(r); !reflect.DeepEqual(got, want) {
		t.Errorf("fired %q\nwant %q", got, want)
	}
	for _, f := range r.Findings {
		if f.Call == 0 || len(f.Evidence) == 0 || f.Message == "" {
			t.Errorf("finding without call or evidence: %+v", f)
		}
		if f.Rule == "closed-world-network" && len(f.Evidence) != 2 {
			t.Errorf("closed-world evidence %q: want the connect and the query once", f.Evidence)
		}
		if f.Rule == "readonly-writes" && f.Hint != "readOnlyHint: true" {
			t.Errorf("hint = %q", f.Hint)
		}
	}
}

// TestAbsentHintsNeverContradict: with no hints the spec's defaults hold
// (not read-only, destructive, not idempotent, open world): only the
// hint-free rule can fire.
func TestAbsentHintsNeverContradict(t *testing.T) {
	none := report.Tool{Name: "none"}
	r := scenario(
		call{tool: none, files: []report.FileChange{wsWrite, del, rewrote}, procs: []report.Process{{Argv: []string{"x"}, Background: true}}, net: []report.NetEvent{outward}},
		call{tool: none, files: []report.FileChange{rewrote}},
		call{tool: none, files: []report.FileChange{tmpWrite}},
	)
	evaluate(r, Policy{})
	if got := fired(r); !reflect.DeepEqual(got, []string{"writes-outside-workspace none"}) {
		t.Errorf("fired %q", got)
	}
}

func TestBetweenPhaseCountsForTheCallBefore(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	r := scenario(call{tool: ro})
	eff := report.NewEffects()
	eff.Files = []report.FileChange{tmpWrite}
	r.Phases = []report.Phase{{Name: "between", After: 1, Effects: eff}}
	evaluate(r, Policy{})
	if got := fired(r); !reflect.DeepEqual(got, []string{"readonly-writes ro", "writes-outside-workspace ro"}) {
		t.Errorf("fired %q", got)
	}
}

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

// TestRulesRaiseRawFindings: without a policy every finding has its rule's
// default severity and one path (or "") per evidence item.
func TestRulesRaiseRawFindings(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	r := scenario(call{tool: ro, files: []report.FileChange{wsWrite, tmpWrite}, procs: []report.Process{{Argv: []string{"x"}, Background: true}}})
	r.Sandbox.EventsDropped = 7
	r.Sandbox.EventsTruncated = 2
	for _, f := range Evaluate(r, Options{}) {
		if f.Severity != DefaultSeverity(f.Rule) || f.Severity == 0 {
			t.Errorf("%s: severity %v, want the default %v", f.Rule, f.Severity, DefaultSeverity(f.Rule))
		}
		if len(f.EvidencePaths) != len(f.Evidence) {
			t.Errorf("%s: %d paths for %d evidence items", f.Rule, len(f.EvidencePaths), len(f.Evidence))
		}
		if f.Rule == ReadonlyWrites && !reflect.DeepEqual(f.EvidencePaths, []string{"/workspace/a", "/tmp/x"}) {
			t.Errorf("paths %q", f.EvidencePaths)
		}
	}
	if len(r.Findings) != 0 {
		t.Error("Evaluate changed the report")
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

// TestCaptureTruncatedFailsTheGate: events cut at the agent's bounds raise
// one server-level finding (no tool) that fails the default gate.
func TestCaptureTruncatedFailsTheGate(t *testing.T) {
	r := scenario()
	if fs := Evaluate(r, Options{}); len(fs) != 0 {
		t.Fatalf("nothing truncated: %+v", fs)
	}
	r.Sandbox.EventsTruncated = 3
	fs := Evaluate(r, Options{})
	if len(fs) != 1 || fs[0].Rule != CaptureTruncated || fs[0].Tool != "" || fs[0].Severity != report.SeverityError ||
		!reflect.DeepEqual(fs[0].Evidence, []string{"3 events truncated"}) {
		t.Errorf("findings %+v", fs)
	}
}
