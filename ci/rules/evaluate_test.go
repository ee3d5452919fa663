package rules

import (
	"encoding/json"
	"reflect"
	"sort"
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
