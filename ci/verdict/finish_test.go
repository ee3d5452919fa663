package verdict_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func tool(name string, h report.Hints) report.Tool {
	return report.Tool{Name: name, Hints: h, Annotations: json.RawMessage(`null`), InputSchema: json.RawMessage(`{"type":"object"}`)}
}

// scan is a report as the sandbox hands it over: observations, no
// findings. tmp is the run-specific suffix of a temp file "save" writes.
func scan(tmp string) *report.Report {
	r := report.New()
	r.Complete = true
	r.Sandbox = report.Sandbox{Network: "none", Isolation: "session", Agent: true}
	r.Tools = []report.Tool{
		tool("save", report.Hints{ReadOnly: yes()}),
		tool("fetch", report.Hints{OpenWorld: no()}),
		tool("legacy", report.Hints{}),
		tool("added", report.Hints{}),
	}
	save := report.NewEffects()
	save.Files = []report.FileChange{
		{Path: "/workspace/out.json.tmp-" + tmp, Change: report.ChangeCreated, Type: "file", Scope: "workspace"},
		{Path: "/home/sandbox/.npm/_cacache/index", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "home"},
	}
	fetch := report.NewEffects()
	fetch.Network = []report.NetEvent{{Kind: "dns", Host: "evil.net", Result: "nxdomain"}, {Kind: "dns", Host: "api.example.com", Result: "nxdomain"}}
	legacy := report.NewEffects()
	legacy.Files = []report.FileChange{{Path: "/tmp/legacy.log", Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "tmp"}}
	r.Calls = []report.Call{
		{Seq: 1, Tool: "save", Arguments: json.RawMessage(`{}`), Source: "empty", Effects: save},
		{Seq: 2, Tool: "fetch", Arguments: json.RawMessage(`{}`), Source: "empty", Effects: fetch},
		{Seq: 3, Tool: "legacy", Arguments: json.RawMessage(`{}`), Source: "empty", Effects: legacy},
		{Seq: 4, Tool: "added", Arguments: json.RawMessage(`{}`), Source: "empty", Effects: report.NewEffects()},
	}
	return r
}

// pinned is the contract of an earlier release: no "added", and a "gone".
func pinned(t *testing.T) *contract.File {
	r := scan("1")
	r.Tools = append(r.Tools[:3:3], tool("gone", report.Hints{}))
	c := contract.FromReport(r)
	return &c
}

func policy(t *testing.T, yaml string) rules.Policy {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := rules.LoadPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// brief renders findings as "rule tool severity [baselined]".
func brief(r *report.Report) []string {
	out := []string{}
	for _, f := range r.Findings {
		s := f.Rule + " " + f.Tool + " " + f.Severity.String()
		if f.Baselined {
			s += " baselined"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func reasons(r *report.Report) []string {
	out := []string{}
	for _, ig := range r.Ignored {
		out = append(out, ig.Rule+" "+ig.Tool+" "+ig.Reason)
	}
	sort.Strings(out)
	return out
}

func mustJSON(t *testing.T, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFinishOwnsTheVerdict builds a report by hand and checks the whole
// verdict: rules, contract drift and baseline under one policy, with
// fingerprints, order, summary and the gate.
func TestFinishOwnsTheVerdict(t *testing.T) {
	pol := policy(t, `
rules: {contract-tool-removed: error}
ignore: {paths: ["/home/sandbox/.npm/**"]}
allowedHosts: ["*.example.com"]
`)
	// The baseline accepts legacy's write (from an earlier run) and a
	// finding that is fixed since.
	earlier := scan("1")
	earlier.Findings = []report.Finding{
		{Rule: rules.WritesOutsideWorkspace, Tool: "legacy", Evidence: []string{"created /tmp/legacy.log"}},
		{Rule: rules.ReadonlyWrites, Tool: "fixed", Evidence: []string{"created /workspace/old"}},
	}
	base := baseline.FromReport(earlier)

	r := scan("4242")
	cfg := verdict.Config{Policy: pol, Contract: pinned(t), Baseline: &base}
	verdict.Finish(r, cfg)

	want := []string{
		"baseline-stale fixed error",
		"closed-world-network fetch error",
		"contract-tool-added added warning",
		"contract-tool-removed gone error", // the policy's severity
		"readonly-writes save error",
		"writes-outside-workspace legacy warning baselined",
		// save's write outside the workspace is all under an ignored path.
	}
	if got := brief(r); !reflect.DeepEqual(got, want) {
		t.Errorf("findings\n got %q\nwant %q", got, want)
	}
	if got, want := reasons(r), []string{"readonly-writes save path /home/sandbox/.npm/**", "writes-outside-workspace save path /home/sandbox/.npm/**"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ignored\n got %q\nwant %q", got, want)
	}
	for _, f := range r.Findings {
		if f.Fingerprint == "" || f.Fingerprint != report.Fingerprint(f) {
			t.Errorf("%s %s: fingerprint %q", f.Rule, f.Tool, f.Fingerprint)
		}
		switch f.Rule {
		case rules.ReadonlyWrites:
			if !reflect.DeepEqual(f.Evidence, []string{"created /workspace/out.json.tmp-4242"}) {
				t.Errorf("readonly-writes evidence %q", f.Evidence)
			}
		case rules.ClosedWorldNetwork:
			if !reflect.DeepEqual(f.Evidence, []string{"dns evil.net"}) {
				t.Errorf("closed-world evidence %q: the allowed host must go", f.Evidence)
			}
		}
	}
	if r.Summary.Findings != 6 || r.Summary.Baselined != 1 || r.Summary.Ignored != 2 || r.Summary.BySeverity["error"] != 4 || r.Summary.BySeverity["warning"] != 1 {
		t.Errorf("summary %+v", r.Summary)
	}
	for _, c := range []struct {
		failOn string
		fails  bool
	}{{"critical", false}, {"error", true}, {"note", true}, {"never", false}} {
		fo, err := verdict.ParseFailOn(c.failOn)
		if err != nil {
			t.Fatal(err)
		}
		if got := verdict.Fails(r, fo); got != c.fails {
			t.Errorf("Fails(%s) = %v", c.failOn, got)
		}
	}
	if _, err := verdict.ParseFailOn("fatal"); err == nil {
		t.Error("--fail-on fatal accepted")
	}

	// Idempotent: a second Finish gives the same bytes.
	first := mustJSON(t, r)
	verdict.Finish(r, cfg)
	if second := mustJSON(t, r); !bytes.Equal(first, second) {
		t.Errorf("a second Finish changed the report:\n%s\n---\n%s", first, second)
	}

	// A baseline written from this report accepts the next run's findings,
	// with another temp suffix and the same policy: nothing new, nothing
	// stale, the gate passes.
	next := baseline.FromReport(r)
	r2 := scan("777")
	verdict.Finish(r2, verdict.Config{Policy: pol, Contract: pinned(t), Baseline: &next})
	for _, f := range r2.Findings {
		if !f.Baselined {
			t.Errorf("not accepted by its own baseline: %s %s %q", f.Rule, f.Tool, f.Evidence)
		}
	}
	if verdict.Fails(r2, verdict.FailOn{Severity: report.SeverityNote}) {
		t.Error("the gate fails on a baselined run")
	}
}

// TestPolicyTakesContractAndStaleFindingsOffTheGate: a policy's off and
// its tool ignores hold for contract drift and stale baseline entries as
// for the rules' findings, and count what they drop.
func TestPolicyTakesContractAndStaleFindingsOffTheGate(t *testing.T) {
	earlier := scan("1")
	earlier.Findings = []report.Finding{{Rule: rules.ReadonlyWrites, Tool: "added", Evidence: []string{"created /workspace/old"}}}
	base := baseline.FromReport(earlier)
	// Only the contract and the baseline speak: "save", "fetch" and
	// "legacy" are not called.
	fresh := func() *report.Report {
		r := scan("1")
		r.Calls = r.Calls[3:]
		return r
	}
	c := pinned(t)
	c.Tools = slices.DeleteFunc(c.Tools, func(t contract.Tool) bool { return t.Name == "gone" })
	gate := verdict.FailOn{Severity: report.SeverityWarning}

	r := fresh()
	verdict.Finish(r, verdict.Config{Contract: c, Baseline: &base})
	if got, want := brief(r), []string{"baseline-stale added error", "contract-tool-added added warning"}; !reflect.DeepEqual(got, want) || !verdict.Fails(r, gate) {
		t.Fatalf("without a policy: %q (want %q) and the gate must fail", got, want)
	}
	for name, c2 := range map[string]struct {
		yaml    string
		reasons []string
	}{
		"off": {`rules: {contract-tool-added: off, baseline-stale: off}`,
			[]string{"baseline-stale added rule off", "contract-tool-added added rule off"}},
		"tool ignore": {`ignore: {tools: [added]}`,
			[]string{"baseline-stale added tool added", "contract-tool-added added tool added"}},
	} {
		r := fresh()
		verdict.Finish(r, verdict.Config{Policy: policy(t, c2.yaml), Contract: c, Baseline: &base})
		if len(r.Findings) != 0 || verdict.Fails(r, gate) {
			t.Errorf("%s: findings %q; the gate must pass", name, brief(r))
		}
		if got := reasons(r); !reflect.DeepEqual(got, c2.reasons) || r.Summary.Ignored != 2 {
			t.Errorf("%s: ignored %q, want %q", name, got, c2.reasons)
		}
	}
}

// TestIgnoredFindingKeepsItsBaselineEntry: the baseline is matched before
// the policy, so an accepted finding that a policy now ignores, whole or
// in part, does not make its entry stale.
func TestIgnoredFindingKeepsItsBaselineEntry(t *testing.T) {
	r := scan("1")
	verdict.Finish(r, verdict.Config{})
	base := baseline.FromReport(r)
	for _, yaml := range []string{
		`ignore: {tools: [save, fetch, legacy]}`,
		`ignore: {paths: ["/home/sandbox/.npm/**", "/tmp/**"]}`,
		`rules: {readonly-writes: "off", writes-outside-workspace: "off", closed-world-network: "off"}`,
	} {
		r := scan("2")
		verdict.Finish(r, verdict.Config{Policy: policy(t, yaml), Baseline: &base})
		for _, f := range r.Findings {
			if f.Rule == rules.BaselineStale || !f.Baselined {
				t.Errorf("%s: %s %s %q", yaml, f.Rule, f.Tool, f.Evidence)
			}
		}
	}
}

// TestTruncatedCaptureFailsTheDefaultGate: events the agent cut at a bound
// make a server-level finding that fails --fail-on error, as dropped
// events do.
func TestTruncatedCaptureFailsTheDefaultGate(t *testing.T) {
	r := report.New()
	r.Sandbox.EventsTruncated = 2
	verdict.Finish(r, verdict.Config{})
	if len(r.Findings) != 1 || r.Findings[0].Rule != rules.CaptureTruncated || r.Findings[0].Tool != "" {
		t.Fatalf("findings %+v", r.Findings)
	}
	failOn, err := verdict.ParseFailOn("error")
	if err != nil {
		t.Fatal(err)
	}
	if !verdict.Fails(r, failOn) {
		t.Error("the default gate passes a report with truncated events")
	}
}

// TestHashBudgetFailsTheDefaultGate: files left uncompared by content
// make a server-level finding that fails --fail-on error.
func TestHashBudgetFailsTheDefaultGate(t *testing.T) {
	r := report.New()
	r.Sandbox.FilesUnhashed = 1
	verdict.Finish(r, verdict.Config{})
	if len(r.Findings) != 1 || r.Findings[0].Rule != rules.HashBudgetExceeded || r.Findings[0].Tool != "" {
		t.Fatalf("findings %+v", r.Findings)
	}
	failOn, err := verdict.ParseFailOn("error")
	if err != nil {
		t.Fatal(err)
	}
	if !verdict.Fails(r, failOn) {
		t.Error("the default gate passes a report with files left unhashed")
	}
}

// TestCoverageLowFailsTheGateWhenAsked: with no minimum, a scan whose
// calls mostly failed passes on its findings alone; the policy's
// coverage.min makes it a coverage-low finding (error, server-level)
// naming the tools not exercised, which the policy can turn off like any
// rule; a server with no tools has nothing to exercise.
func TestCoverageLowFailsTheGateWhenAsked(t *testing.T) {
	failing := func() *report.Report {
		r := scan("1")
		r.Calls[1].IsError = true                                       // fetch: errored
		r.Calls[3].Error, r.Calls[3].ErrorKind = "timed out", "timeout" // added: errored
		r.Calls = append(r.Calls, report.Call{Seq: 5, Tool: "legacy", Source: "repeat", Arguments: json.RawMessage(`{}`), Effects: report.NewEffects()})
		return r
	}
	r := failing()
	verdict.Finish(r, verdict.Config{})
	if got := brief(r); slices.Contains(got, "coverage-low  error") {
		t.Errorf("coverage-low without a minimum: %q", got)
	}
	if r.Summary.Exercised != 2 || r.Summary.Errored != 2 {
		t.Errorf("summary %+v", r.Summary)
	}

	for _, tc := range []struct {
		policy string
		want   bool
	}{
		{"coverage: {min: 0.8}", true},
		{"coverage: {min: 0.5}", false}, // 2 of 4 is enough
		{"coverage: {min: 0.75}\nrules: {coverage-low: off}", false},
	} {
		r := failing()
		verdict.Finish(r, verdict.Config{Policy: policy(t, tc.policy)})
		var low *report.Finding
		for i := range r.Findings {
			if r.Findings[i].Rule == rules.CoverageLow {
				low = &r.Findings[i]
			}
		}
		if (low != nil) != tc.want {
			t.Errorf("%s: coverage-low %v, want %v", tc.policy, low, tc.want)
			continue
		}
		if low == nil {
			continue
		}
		if low.Tool != "" || low.Severity != report.SeverityError || !reflect.DeepEqual(low.Evidence, []string{"errored fetch", "errored added"}) ||
			!strings.HasPrefix(low.Message, "exercised 2 of 4 tools (50%), below the policy's minimum of 80%") || low.Fingerprint == "" {
			t.Errorf("coverage-low %+v", *low)
		}
		if !verdict.Fails(r, verdict.FailOn{Severity: report.SeverityError}) {
			t.Error("coverage-low does not fail the gate")
		}
	}

	empty := report.New()
	empty.Complete = true
	verdict.Finish(empty, verdict.Config{Policy: policy(t, "coverage: {min: 1}")})
	if len(empty.Findings) != 0 {
		t.Errorf("no tools: %q", brief(empty))
	}
}

func TestPolicyRefusesABadCoverageMinimum(t *testing.T) {
	for _, bad := range []string{"coverage: {min: 1.5}", "coverage: {min: -0.1}", "coverage: {minimum: 0.8}", "coverage: {min: 80%}"} {
		p := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := rules.LoadPolicy(p); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
