package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/joshdk/go-junit"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// Tests that do nothing but scans of their own (scanFixture: a report and
// workspace in their temporary directories, containers of their own run)
// call t.Parallel: a scan mostly waits (container starts, settle, linger
// and replay windows), so scans side by side overlap their waits. Go
// starts the parallel tests once every other test of the package has
// ended, so a test that sets the environment, counts or removes this
// process's containers or images, cleans, evicts, reaps or signals stays
// serial and never runs beside them; so does TestDeterministicUnderLoad,
// whose load is its own.

// scanFixture runs `mcpsandbox scan` on the fixture server with the given
// extra flags and server arguments; it returns the exit code and the JSON
// report.
func scanFixture(t *testing.T, flags []string, serverArgs ...string) (int, []byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	args := fixtureArgs(t, out, flags, serverArgs...)
	var stdout, stderr bytes.Buffer
	code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report: %v; stderr %s", err, stderr.String())
	}
	return code, b, stderr.String()
}

// fixtureArgs is the command line of a scan of the fixture server that
// writes its JSON report to out.
func fixtureArgs(t testing.TB, out string, flags []string, serverArgs ...string) []string {
	t.Helper()
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	args := []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--mount", fx.Source + ":" + fx.Target,
		// A moment's linger, no replay and no boundary probes, unless the
		// test asks (a later --linger, --no-replay=false,
		// --no-boundary=false): the suite stays short; the tests of
		// replays turn them on, and sandbox's TestBoundaryProbes tests the
		// probes.
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary"}
	args = append(args, flags...)
	return append(append(args, "--", fx.Target), serverArgs...)
}

func decode(t *testing.T, b []byte) report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

const lyingProbes = `[{"tool":"echo","arguments":{"text":"x"}},{"tool":"counter"},{"tool":"counter"},{"tool":"tidy"}]`

// TestEachRuleFiresExactlyWhereItShould runs the lying fixture and checks
// the whole set of findings: every rule on the tools that break it, none
// on an honest tool; over stdio, streamable HTTP and HTTP+SSE alike.
func TestEachRuleFiresExactlyWhereItShould(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		transport []string // flags
		serve     []string // the fixture's
	}{
		{nil, nil},
		{[]string{"--transport", "http", "--port", "3000"}, []string{"--http=127.0.0.1:3000"}},
		{[]string{"--transport", "sse", "--port", "auto"}, []string{"--sse=:0"}},
	} {
		name := "stdio"
		if tc.transport != nil {
			name = tc.transport[1]
		}
		t.Run(name, func(t *testing.T) { t.Parallel(); eachRuleFires(t, tc.transport, tc.serve) })
	}
}

func eachRuleFires(t *testing.T, transport, serve []string) {
	dir := t.TempDir()
	// Over stdio with replays, as by default: every lie is reproduced and
	// stays the lying tool's. Replays open sessions as the scan does,
	// whatever the transport: over HTTP the suite's default (no replay)
	// keeps it short, and the findings are the same.
	flags := append([]string{"--probes", writeFile(t, dir, "p.json", lyingProbes), "--workspace", seedWorkspaceDir(t)}, transport...)
	if transport == nil {
		flags = append(flags, "--no-replay=false")
	}
	code, b, stderr := scanFixture(t, flags, append([]string{"honest", "liar"}, serve...)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	got := map[string][]string{}
	for _, f := range r.Findings {
		got[f.Rule] = append(got[f.Rule], f.Tool)
	}
	for k := range got {
		sort.Strings(got[k])
	}
	want := map[string][]string{
		// background's child writes a second later and ends within
		// --settle: its write is the call's, and it ran in no background
		// (TestBackgroundOutlivesTheSettle has one that does).
		"readonly-writes":          {"background", "lying_read", "run_tests"},
		"nondestructive-deletes":   {"tidy"},
		"idempotent-repeats":       {"counter"},
		"closed-world-network":     {"exfiltrate", "lookup", "upload"},
		"writes-outside-workspace": {"background", "lying_read", "run_tests"},
		// The default network is the sinkhole: the POST is made, answered
		// and read, and the credentials in it are found.
		"secret-exfiltration": {"exfiltrate"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings by rule:\n got %v\nwant %v", got, want)
		for _, c := range r.Calls {
			t.Logf("call %d %s: %+v", c.Seq, c.Tool, c.Effects)
		}
		t.Logf("phases %+v problems %+v", r.Phases, r.Problems)
	}
	for _, f := range r.Findings {
		switch f.Tool {
		case "echo", "list_workspace", "read_file", "add_note", "no_hints":
			t.Errorf("a finding on honest tool %s: %+v", f.Tool, f)
		}
	}
	if err := reporttest.Validate(b); err != nil {
		t.Errorf("the report does not validate against report.schema.json: %v", err)
	}
}

func seedWorkspaceDir(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "data.json"), []byte(`{"a":1}`), 0o644)
	return dir
}

// TestSameScenarioSameBytes: two scans of one scenario give byte-identical
// JSON outside the timing block.
func TestSameScenarioSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := seedWorkspaceDir(t)
	probes := writeFile(t, dir, "p.json", lyingProbes)
	var outs [][]byte
	for i := 0; i < 2; i++ {
		_, b, _ := scanFixture(t, []string{"--no-replay=false", "--probes", probes, "--workspace", ws}, "honest", "liar")
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if len(m["timing"]) == 0 {
			t.Fatal("no timing block")
		}
		delete(m, "timing")
		outs = append(outs, mustJSON(t, m))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		i := 0
		for i < len(outs[0]) && i < len(outs[1]) && outs[0][i] == outs[1][i] {
			i++
		}
		lo := max(0, i-200)
		t.Errorf("two runs differ outside timing at byte %d:\n%s\n---\n%s", i, outs[0][lo:min(len(outs[0]), i+200)], outs[1][lo:min(len(outs[1]), i+200)])
	}
	if bytes.Contains(outs[0], []byte(ws)) || bytes.Contains(outs[0], []byte(dir)) {
		t.Error("the report names a host path")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReportsForCI writes SARIF, JUnit and Markdown of a real scan in one
// run, validates the SARIF and parses the JUnit.
func TestReportsForCI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sarif, junitPath, md := filepath.Join(dir, "r.sarif"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.md")
	code, _, _ := scanFixture(t, []string{"--report", "sarif=" + sarif, "--report", "junit=" + junitPath, "--report", "markdown=" + md, "--fail-on", "never"}, "liar")
	if code != 0 {
		t.Errorf("--fail-on never: exit %d", code)
	}
	sb, _ := os.ReadFile(sarif)
	if err := reporttest.ValidateWith("../../ci/formats/testdata/sarif-schema-2.1.0.json", sb); err != nil {
		t.Errorf("SARIF: %v", err)
	}
	suites, err := junit.IngestFile(junitPath)
	if err != nil || len(suites) != 1 || suites[0].Totals.Failed == 0 {
		t.Errorf("JUnit: %v %+v", err, suites)
	}
	if b, _ := os.ReadFile(md); !bytes.Contains(b, []byte("### Findings")) {
		t.Errorf("markdown: %s", b)
	}
}

// TestContractDriftFailsTheBump: a release that renames a property and
// flips readOnlyHint fails --contract; the release pinned passes its own.
func TestContractDriftFailsTheBump(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pin := filepath.Join(dir, "contract.json")
	code, b, stderr := scanFixture(t, []string{"--contract-out", pin, "--probes", writeFile(t, dir, "p.json", `[]`)}, "honest")
	if code != 0 {
		t.Fatalf("v1: exit %d %s", code, stderr)
	}
	// v1 against its own contract: the verdict alone, on v1's
	// observations (a second scan would list the same tools again).
	pinned, err := contract.Load(pin)
	if err != nil {
		t.Fatal(err)
	}
	v1 := decode(t, b)
	verdict.Finish(&v1, verdict.Config{Contract: &pinned})
	if len(v1.Findings) != 0 {
		t.Errorf("v1 against its own contract: findings %+v", v1.Findings)
	}
	code, b, _ = scanFixture(t, []string{"--contract", pin}, "honest", "--v2")
	if code != 1 {
		t.Fatalf("v2: exit %d, want 1", code)
	}
	got := map[string]string{}
	for _, f := range decode(t, b).Findings {
		got[f.Rule+" "+f.Tool] = f.Severity.String() + " " + f.Evidence[0]
	}
	if got["contract-annotation-changed list_workspace"] != "error readOnlyHint: true -> false" ||
		got["contract-schema-changed echo"] != `warning property "message" added: {"description":"text to echo","type":"string"}` {
		t.Errorf("drift findings = %v", got)
	}
}

// TestStaleBaselineFailsTheGate: accepted findings pass; a baseline entry
// that no longer occurs fails.
func TestStaleBaselineFailsTheGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "baseline.json")
	probes := writeFile(t, dir, "p.json", `[{"tool":"lying_read"},{"tool":"echo"}]`)
	code, b, _ := scanFixture(t, []string{"--probes", probes, "--write-baseline", base}, "honest", "liar")
	if code != 1 {
		t.Fatalf("first scan: exit %d, want 1", code)
	}
	// The same findings against the baseline they wrote: the verdict
	// alone, on the first scan's observations. A second scan would
	// observe them again; that its findings are the same bytes, whatever
	// the bait seed, is TestBaitSeedGivesTheSameReport's.
	accepted, err := baseline.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, b)
	verdict.Finish(&r, verdict.Config{Baseline: &accepted})
	if verdict.Fails(&r, verdict.FailOn{Severity: report.SeverityError}) || r.Summary.Baselined == 0 { // --fail-on's default
		t.Errorf("same findings, baselined: findings %+v, summary %+v", r.Findings, r.Summary)
	}
	code, b, _ = scanFixture(t, []string{"--baseline", base}, "honest")
	stale := 0
	for _, f := range decode(t, b).Findings {
		if f.Rule == "baseline-stale" {
			stale++
		}
	}
	if code != 1 || stale == 0 {
		t.Errorf("fixed server against the old baseline: exit %d, %d stale", code, stale)
	}
}

// TestNegativesFindTheToolThatDoesNotValidate: --negatives lists each
// violation the lax twin accepts, and none for the validating twin.
func TestNegativesFindTheToolThatDoesNotValidate(t *testing.T) {
	t.Parallel()
	code, b, stderr := scanFixture(t, []string{"--negatives", "--fail-on", "never"}, "schema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decode(t, b)
	negatives := map[string]int{}
	for _, c := range r.Calls {
		if c.Source == "negative" {
			negatives[c.Tool]++
			if c.Tool == "strict_set" && c.ErrorKind == "" && !c.IsError {
				t.Errorf("strict_set accepted %s (%s)", c.Arguments, c.Negative)
			}
		}
	}
	accepted := map[string][]string{}
	for _, f := range r.Findings {
		if f.Rule == "schema-violation-accepted" {
			accepted[f.Tool] = append(accepted[f.Tool], f.Evidence[0])
		}
	}
	if negatives["lax_set"] < 8 || len(accepted["lax_set"]) != negatives["lax_set"] || len(accepted["strict_set"]) != 0 {
		t.Errorf("negatives %v; accepted %v", negatives, accepted)
	}
	for _, want := range []string{`required property "key" dropped`, `property "count" above its maximum 10`, `property "mode" outside its enum`,
		`property "key" longer than its maxLength 8`, `an extra property where additionalProperties is false`} {
		found := false
		for _, v := range accepted["lax_set"] {
			found = found || v == want
		}
		if !found {
			t.Errorf("lax_set: %q not reported", want)
		}
	}
}

// TestHoneytokenExfiltrationIsCritical: a tool that reads
// ~/.aws/credentials and posts it to an outside host, in sinkhole mode,
// yields secret-exfiltration naming the tokens, never their values.
func TestHoneytokenExfiltrationIsCritical(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, []string{"--network", "sinkhole", "--probes", writeFile(t, dir, "p.json", `{"exfiltrate":{},"echo":{"text":"x"}}`)}, "honest", "liar")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var found *report.Finding
	r := decode(t, b)
	for i, f := range r.Findings {
		if f.Rule == "secret-exfiltration" {
			found = &r.Findings[i]
		}
	}
	if found == nil || found.Severity != report.SeverityCritical || found.Tool != "exfiltrate" || found.Call != 1 {
		t.Fatalf("secret-exfiltration = %+v; findings %+v", found, r.Findings)
	}
	want := []string{"aws-access-key-id in http POST collector.example.net/ingest", "aws-secret-access-key in http POST collector.example.net/ingest"}
	if !reflect.DeepEqual(found.Evidence, want) {
		t.Errorf("evidence %q, want %q", found.Evidence, want)
	}
	if bytes.Contains(b, []byte("AKIA")) {
		t.Error("the report carries a token's value")
	}
	for _, f := range r.Findings {
		if f.Tool == "echo" {
			t.Errorf("finding on the honest echo: %+v", f)
		}
	}
}
