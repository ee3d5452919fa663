package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// tsSteps is what the TypeScript SDK client of testdata/tsclient/steps.mjs
// writes of what it saw.
type tsSteps struct {
	Lists [][]struct {
		Name        string                     `json:"name"`
		Annotations map[string]json.RawMessage `json:"annotations"`
	} `json:"lists"`
	Calls []struct {
		Name  string `json:"name"`
		Text  string `json:"text"`
		Error string `json:"error"`
	} `json:"calls"`
	Changed  int               `json:"changed"`
	Errors   []string          `json:"errors"`
	Logs     []json.RawMessage `json:"logs"`
	Elicited int               `json:"elicited"`
}

// hint is a tool's hint in list i ("" when the tool or the hint is not
// there).
func (s tsSteps) hint(i int, tool, hint string) string {
	if i < 0 {
		i += len(s.Lists)
	}
	if i < 0 || i >= len(s.Lists) {
		return ""
	}
	for _, t := range s.Lists[i] {
		if t.Name == tool {
			return string(t.Annotations[hint])
		}
	}
	return ""
}

// tsJudged is one run of `mcpsandbox run` (in process) of the fixture
// with sets, driven by the TypeScript SDK's client through steps, and
// what it left: what the client saw, the log's records and run's stderr.
type tsJudged struct {
	seen   tsSteps
	recs   []proxy.RunRecord
	stderr string
}

func (j tsJudged) String() string {
	b, _ := json.Marshal(j.seen)
	return "the client saw " + string(b) + "\nrun's stderr:\n" + j.stderr
}

func (j tsJudged) has(f func(proxy.RunRecord) bool) bool { return slices.ContainsFunc(j.recs, f) }

func (j tsJudged) finding(rule string) bool {
	return j.has(func(r proxy.RunRecord) bool { return r.Type == "finding" && r.Rule == rule })
}

func runTSSteps(t *testing.T, sets, steps, flags []string) tsJudged {
	t.Helper()
	return runTSStepsErr(t, sets, steps, flags, false)
}

// runTSStepsErr is runTSSteps; with clientErrors the client's errors are
// left to the test.
func runTSStepsErr(t *testing.T, sets, steps, flags []string, clientErrors bool) tsJudged {
	t.Helper()
	cli := sandboxtest.Docker(t)
	image := sandboxtest.NodeImage(t, cli)
	fixture := sandboxtest.Fixture(t)
	agent := sandboxtest.Agent(t)
	ws := t.TempDir()
	for _, f := range []string{".env", "README.md"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	c := startTSClient(ctx, t, cli, image, runID, "steps.mjs", steps...)
	defer c.Close(ctx)
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	args := append([]string{"--rm", "--image", image, "--agent", agent, "--mount", fixture.Source + ":" + fixture.Target,
		"--workspace", ws, "--log", logPath, "--phase-interval", "500ms"}, flags...)
	args = append(append(args, "--", sandboxtest.FixtureMount), sets...)
	var stderr bytes.Buffer
	runErr := runRun(ctx, args, c.Stdout(), c.Stdin(), &stderr)
	c.Stdin().Close()
	// The client writes its result once it sees the end (after a flood,
	// once it has read what was sent before it): it is given a moment to,
	// on a loaded machine too, before it is stopped.
	c.Exited(ctx, 30*time.Second)
	if err := c.Stop(ctx); err != nil {
		t.Log(err)
	}
	tail, _, _ := c.Stderr()
	j := tsJudged{stderr: stderr.String(), recs: readLog(t, logPath)}
	if runErr != nil {
		t.Fatalf("run: %v\n%s\nclient's stderr:\n%s", runErr, j, tail)
	}
	_, line, ok := strings.Cut(tail, "TSCLIENT ")
	if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &j.seen) != nil {
		t.Fatalf("the client wrote no result:\n%s\n%s", tail, j)
	}
	if len(j.seen.Errors) > 0 && !clientErrors {
		t.Errorf("the client's errors: %q\n%s", j.seen.Errors, j)
	}
	return j
}

// TestRunJudgesTheStartup: a server that at startup deletes a workspace
// file, appends to ~/.bashrc, resolves a name and connects out has its
// findings in run's log and on stderr, and the client's first list
// already has no tool claiming read-only or a closed world.
func TestRunJudgesTheStartup(t *testing.T) {
	j := runTSSteps(t, []string{"startup-hostile"}, []string{"list"}, nil)
	for _, rule := range []string{rules.PhaseWorkspaceChanges, rules.ShellOrCredentialFiles, rules.PhaseNetwork} {
		if !j.finding(rule) || !strings.Contains(j.stderr, "outside any tool call") {
			t.Errorf("no %s finding\n%s", rule, j)
		}
	}
	if ro, ow := j.seen.hint(0, "no_op", "readOnlyHint"), j.seen.hint(0, "no_op", "openWorldHint"); ro == "true" || ow == "false" {
		t.Errorf("the first list: no_op readOnlyHint %s, openWorldHint %s\n%s", ro, ow, j)
	}
}

// TestRunJudgesTheTeardown: what the server does once its stdin ends (a
// shell file appended, a workspace file deleted, the --secret sent in a
// DNS name) is judged: findings in the log and on stderr.
func TestRunJudgesTheTeardown(t *testing.T) {
	secret := "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY" // a DNS label as it is
	j := runTSSteps(t, []string{"teardown-hostile"}, []string{"list", "call:no_op:{}"},
		[]string{"--env", "AWS_SECRET_ACCESS_KEY=" + secret, "--secret", "AWS_SECRET_ACCESS_KEY"})
	for _, rule := range []string{rules.SecretExfiltration, rules.ShellOrCredentialFiles, rules.PhaseWorkspaceChanges} {
		if !j.finding(rule) {
			t.Errorf("no %s finding on the teardown\n%s", rule, j)
		}
	}
	if !strings.Contains(j.stderr, "(teardown)") {
		t.Errorf("no teardown finding on stderr\n%s", j)
	}
	if strings.Contains(j.stderr, secret) {
		t.Errorf("the secret is on stderr\n%s", j)
	}
}

// TestRunATimerFromALandingInB: a read-only liar's timer that writes
// while an honest slow tool runs gets the liar corrected as well as the
// slow tool, in the list the client reads next; neither is refused,
// under a policy that denies.
func TestRunATimerFromALandingInB(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("run:\n  rules:\n    readonly-writes: deny\n  denyServerAfter: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := runTSSteps(t, []string{"timer_write", "slow_read"},
		[]string{"list", `call:timer_write:{"ms":20000,"name":"late.txt","next":true}`, `call:slow_read:{"ms":1500}`, "changed:5000", "list", `call:slow_read:{"ms":10}`},
		[]string{"--policy", pol})
	for _, tool := range []string{"timer_write", "slow_read"} {
		if h := j.seen.hint(-1, tool, "readOnlyHint"); h == "true" {
			t.Errorf("%s: readOnlyHint %s in the last list\n%s", tool, h, j)
		}
	}
	if !j.has(func(r proxy.RunRecord) bool {
		return r.Type == "finding" && r.Rule == rules.ReadonlyWrites && len(r.Candidates) == 2
	}) {
		t.Errorf("no readonly-writes finding naming both candidates\n%s", j)
	}
	if last := j.seen.Calls[len(j.seen.Calls)-1]; last.Error != "" {
		t.Errorf("the slow tool was refused on shared evidence: %+v\n%s", last, j)
	}
}

// TestRunRenameDoesNotReset: under deny, a liar that renames itself
// after each call (upload, upload_v2, ...; a property reworded between
// them) runs once: its next name is refused, listed already corrected,
// and so is every later call.
func TestRunRenameDoesNotReset(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("run:\n  rules:\n    readonly-writes: deny\n  denyServerAfter: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each call goes to the name the last list has: a refused name is
	// never renamed, and is called again. The first call brings two
	// list_changed, the server's (the rename) and run's (the correction),
	// in either order.
	steps := []string{"list", `callany:upload:{"path":"x"}`, "changed:5000", "changed:5000", "list"}
	for range 2 {
		steps = append(steps, `callany:upload:{"path":"x"}`, "sleep:300", "list")
	}
	j := runTSSteps(t, []string{"rename-hostile"}, steps, []string{"--policy", pol})
	ran := 0
	for _, c := range j.seen.Calls {
		if c.Error == "" {
			ran++
		} else if !strings.Contains(c.Error, rules.ReadonlyWrites) {
			t.Errorf("call %s: %s, want a refusal naming the rule", c.Name, c.Error)
		}
	}
	if h := j.seen.hint(1, "upload_v2", "readOnlyHint"); h != "false" {
		t.Errorf("upload_v2 first listed with readOnlyHint %q\n%s", h, j)
	}
	if ran != 1 || len(j.seen.Calls) != 3 {
		t.Errorf("%d of %d calls ran, want 1 of 3\n%s", ran, len(j.seen.Calls), j)
	}
}

// TestRunBothProtocolGenerations: a Go SDK client of 2025-11-25
// (initialize) and one of 2026-07-28 (server/discover, lists kept for
// their ttlMs) both get the startup judged before their first list, and
// a list they may not keep: the server's ttlMs of ten minutes reaches
// them as 0.
func TestRunBothProtocolGenerations(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	image := sandboxtest.NodeImage(t, cli)
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			cs, _, stderr := runProxyAt(t, protocol, nil,
				"--image", image, "--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "--ttl-ms=600000", "startup-hostile", "liar")
			defer cs.Close()
			ctx := context.Background()
			if got := cs.InitializeResult().ProtocolVersion; got != protocol {
				t.Fatalf("protocol %s, want %s", got, protocol)
			}
			list := func() *mcp.ListToolsResult {
				t.Helper()
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr)
				}
				return res
			}
			hints := func(res *mcp.ListToolsResult, name string) *mcp.ToolAnnotations {
				for _, tl := range res.Tools {
					if tl.Name == name {
						return tl.Annotations
					}
				}
				t.Fatalf("%s not listed\n%s", name, stderr)
				return nil
			}
			first := list()
			if first.TTLMs != 0 {
				t.Errorf("ttlMs %d reached the client", first.TTLMs)
			}
			if a := hints(first, "no_op"); a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("the first list after a hostile startup: no_op %+v\n%s", a, stderr)
			}
			if a := hints(first, "lying_read"); a.ReadOnlyHint {
				t.Errorf("the first list: lying_read readOnlyHint true\n%s", stderr)
			}
		})
	}
}

// TestRunLateTimerBetweenCalls: a read-only tool whose timer writes a
// moment after its call (between calls, no call running) is corrected in
// the list the client reads next.
func TestRunLateTimerBetweenCalls(t *testing.T) {
	j := runTSSteps(t, []string{"timer_write"},
		[]string{"list", `call:timer_write:{"ms":1000,"name":"late.txt"}`, "changed:8000", "list"}, nil)
	if h := j.seen.hint(-1, "timer_write", "readOnlyHint"); h == "true" {
		t.Errorf("timer_write: readOnlyHint %s after its timer wrote\n%s", h, j)
	}
	if !j.has(func(r proxy.RunRecord) bool {
		return r.Type == "finding" && r.Rule == rules.ReadonlyWrites && r.Tool == "timer_write"
	}) {
		t.Errorf("want timer_write's readonly-writes, the stretch after its call being its own\n%s", j)
	}
	if j.seen.Changed == 0 {
		t.Errorf("no list_changed\n%s", j)
	}
}

// TestRunServerAsksUnderPolicy: a read-only tool asks the user, through
// the TypeScript client, for a token and sends it out in a DNS name;
// another speaks in mcpsandbox's name. The request is logged with its
// call, the typed token is watched (secret-exfiltration, the token kept
// out of the log), the impersonation reaches the client marked; under
// run.requests deny the client is never asked.
func TestRunServerAsksUnderPolicy(t *testing.T) {
	const token = "sk9f3c1e7a2b4d6" // a DNS label as it is
	steps := []string{"list", "loglevel:debug", "answer:" + token, "call:ask_token:{}", "call:say_verified:{}", "sleep:300"}
	j := runTSSteps(t, []string{"asks-hostile"}, steps, []string{"--network", "sinkhole"})
	if !j.has(func(r proxy.RunRecord) bool {
		return r.Type == "request" && r.Method == "elicitation/create" && r.Tool == "ask_token"
	}) {
		t.Errorf("no request record for the elicitation\n%s", j)
	}
	if !j.finding(rules.SecretExfiltration) {
		t.Errorf("the typed token sent out is no secret-exfiltration\n%s", j)
	}
	if strings.Contains(j.stderr, token) {
		t.Errorf("the typed token is on stderr\n%s", j)
	}
	marked := false
	for _, l := range j.seen.Logs {
		b, _ := json.Marshal(l)
		marked = marked || strings.Contains(string(b), "not mcpsandbox")
		if strings.Contains(string(b), `"mcpsandbox: call 1`) {
			t.Errorf("the client was shown the server's words as mcpsandbox's: %s", b)
		}
	}
	if !marked {
		t.Errorf("no marked logging message reached the client\n%s", j)
	}

	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("run:\n  requests:\n    elicitation/*: deny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j = runTSSteps(t, []string{"asks-hostile"}, []string{"list", "answer:" + token, "call:ask_token:{}"}, []string{"--policy", pol, "--network", "sinkhole"})
	if j.seen.Elicited != 0 {
		t.Errorf("the client was asked %d time(s) under deny\n%s", j.seen.Elicited, j)
	}
	if !j.has(func(r proxy.RunRecord) bool { return r.Type == "request" && r.Refused }) {
		t.Errorf("no refused request record\n%s", j)
	}
}

// TestRunPingFloodNeverBlocks: a server that floods the TypeScript
// client with pings during a call never blocks run: with a small
// --client-queue the session ends with a flood problem, and the client
// (whose call times out at 30 s) is done; at the default too the call is
// answered or the session cut off, never held.
func TestRunPingFloodNeverBlocks(t *testing.T) {
	j := runTSStepsErr(t, []string{"ping-flood"}, []string{"list", `call:ping_flood:{"ms":3000}`}, []string{"--client-queue", "20"}, true)
	if !j.has(func(r proxy.RunRecord) bool { return r.Type == "problem" && r.Reason == "flood" }) {
		t.Errorf("no flood problem with --client-queue 20\n%s", j)
	}
	// At the default bound the flood outruns this client too: the call
	// is answered or the session cut off, never held.
	j = runTSStepsErr(t, []string{"ping-flood"}, []string{"list", `call:ping_flood:{"ms":2000}`}, nil, true)
	answered := len(j.seen.Calls) == 1 && j.seen.Calls[0].Error == ""
	if !answered && !j.has(func(r proxy.RunRecord) bool { return r.Type == "problem" && r.Reason == "flood" }) {
		t.Errorf("the flooding call neither answered nor cut off: %+v\n%s", j.seen.Calls, j)
	}
}

// TestRunLargeLayerNeverHoldsACall: a server that makes 190,000 files at
// startup (which made each call wait for a walk of them: seconds on a
// loaded machine) is called ten times back to back by a client whose own
// timeout is 5 s: no call is held to that timeout. A call that meets a
// collection still reading the flood may be refused past --judge-wait
// (4 s here, under the client's timeout); once the journal holds, every
// call is answered; the teardown's walk finds nothing the journal did
// not tell.
func TestRunLargeLayerNeverHoldsACall(t *testing.T) {
	steps := []string{"list", "timeout:5000"}
	for range 10 {
		steps = append(steps, "call:echo:{}")
	}
	j := runTSStepsErr(t, []string{"flood", "files=190000"}, steps, []string{"--judge-wait", "4s"}, true)
	if len(j.seen.Calls) != 10 {
		t.Fatalf("%d calls seen, want 10\n%s", len(j.seen.Calls), j)
	}
	for i, c := range j.seen.Calls {
		refused := strings.Contains(c.Error, proxy.JudgeWaitRule)
		if c.Error != "" && (!refused || i >= 5) {
			t.Errorf("call %d: %s\n%s", i+1, c.Error, j)
		}
	}
	if j.has(func(r proxy.RunRecord) bool { return r.Type == "problem" && r.Reason == report.ProblemJournal }) {
		t.Errorf("a journal problem:\n%s", j)
	}
}
