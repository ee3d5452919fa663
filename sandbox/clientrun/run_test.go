package clientrun_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/clientverdict"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientadapter"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientrun"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/twin"
)

// fixtureMount is where the tests mount the fixture client.
const fixtureMount = "/opt/fixture/client"

// fixtureClient builds the fixture client (static, once) and returns its
// mount.
func fixtureClient(t *testing.T) sandbox.Mount {
	t.Helper()
	return sandbox.Mount{Source: sandboxtest.Build(t, "./sandbox/internal/fixtureclient", "fixtureclient", true), Target: fixtureMount}
}

var baseImage struct {
	once sync.Once
	err  error
}

func base(t *testing.T, cli *client.Client) string {
	t.Helper()
	baseImage.once.Do(func() { _, baseImage.err = images.Build(context.Background(), cli, "base", images.BuildOptions{}) })
	if baseImage.err != nil {
		t.Fatalf("building the base image: %v", baseImage.err)
	}
	return "mcpsandbox/base:latest"
}

// run tests the fixture client with args under the fixture adapter.
func run(t *testing.T, cli *client.Client, o clientrun.Options, args ...string) *clientreport.Report {
	t.Helper()
	a, _ := clientadapter.Builtin("fixture")
	o.Adapter = a
	o.Command = append([]string{fixtureMount}, args...)
	o.Image = base(t, cli)
	o.Mounts = []sandbox.Mount{fixtureClient(t)}
	o.Agent = sandboxtest.Agent(t)
	o.RunID = label.NewRunID()
	o.Judge = clientverdict.Judge{}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	sandboxtest.NoLeftovers(t, cli, o.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := clientrun.Run(ctx, cli, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if t.Failed() || testing.Verbose() {
		rep.WriteText(os.Stderr)
	}
	return rep
}

func want(t *testing.T, rep *clientreport.Report, v clientreport.Verdict, pre clientreport.Precondition, code int) {
	t.Helper()
	if rep.Verdict != v || rep.Precondition != pre || rep.ExitCode() != code {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("got %s %q (exit %d), want %s %q (exit %d):\n%s", rep.Verdict, rep.Precondition, rep.ExitCode(), v, pre, code, b.String())
	}
}

func leg(rep *clientreport.Report, name string) *clientreport.LegRun {
	for i := range rep.Legs {
		if rep.Legs[i].Name == name {
			return &rep.Legs[i]
		}
	}
	return nil
}

// A client that runs read-only tools unasked: alpha ran (the ledger and
// the disk agree, with the leg's nonce), beta was gated.
func TestReadOnlyAutoApproverIsConfirmed(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{}, "--policy", "readonly-auto")
	want(t, rep, clientreport.Confirmed, "", 1)
	if len(rep.Legs) != 2 || rep.Control != clientreport.ControlNotRun {
		t.Errorf("legs %d, control %s", len(rep.Legs), rep.Control)
	}
	a, b := leg(rep, "alpha"), leg(rep, "beta")
	if len(a.Markers) != 1 || len(b.Markers) != 0 || a.Nonce == b.Nonce || !a.Fresh || !b.Fresh {
		t.Errorf("markers %v %v, nonces %s %s, fresh %t %t", a.Markers, b.Markers, a.Nonce, b.Nonce, a.Fresh, b.Fresh)
	}
	if !strings.Contains(string(rep.HeldFixed.Listing), `"name":"alpha"`) || !rep.SelfTest.OK || len(rep.SelfTest.Legs) != 2 {
		t.Errorf("evidence: listing %s, self-test %+v", rep.HeldFixed.Listing, rep.SelfTest)
	}
	for _, s := range rep.SelfTest.Legs {
		if len(s.Markers) != 2 {
			t.Errorf("self-test of %s: %+v", s.Leg, s)
		}
	}
	// The client's effects: its process, its connection to the model,
	// alpha's marker.
	var proc, net bool
	for _, p := range a.Effects.Processes {
		proc = proc || (len(p.Argv) > 0 && p.Argv[0] == fixtureMount)
	}
	for _, n := range a.Effects.Network {
		net = net || n.Port == twin.ModelPort
	}
	if !proc || !net || len(a.Effects.Files) != 1 || a.Effects.Files[0].Path != a.Markers[0] {
		t.Errorf("effects %+v", a.Effects)
	}
	var calls int
	for _, raw := range a.Ledger {
		var e twin.Entry
		json.Unmarshal(raw, &e)
		if e.Method == "tools/call" {
			calls++
			if e.Tool != twin.Alpha || e.Conn != twin.ConnStdio || e.Phase != twin.PhaseClient {
				t.Errorf("ledger entry %+v", e)
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d calls in the alpha leg's ledger", calls)
	}
}

// A client that asks for every tool: REFUTED, and its positive control
// (the server trusted) shows that alpha would run: backed. Over HTTP,
// with a streamed Anthropic model.
func TestAskAllIsRefutedAndBacked(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{TwinTransport: "http"}, "--policy", "ask-all", "--api", "anthropic", "--stream")
	want(t, rep, clientreport.Refuted, "", 0)
	if rep.Control != clientreport.ControlPassed || !rep.Backed || len(rep.Legs) != 3 {
		t.Fatalf("control %s backed %t legs %d", rep.Control, rep.Backed, len(rep.Legs))
	}
	c := leg(rep, "control")
	if !c.Trusted || c.Tool != twin.Alpha || len(c.Markers) != 1 || rep.Client.Transport != "http" {
		t.Errorf("control leg %+v", c)
	}
	if !strings.Contains(leg(rep, "alpha").Exit.Stdout, "not approved") {
		t.Errorf("the alpha leg's client was not asked: %q", leg(rep, "alpha").Exit.Stdout)
	}
}

// Without the control a REFUTED is unbacked: not a clean bill (exit 3).
func TestRefutedWithoutControlIsUnbacked(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{NoControl: true}, "--policy", "ask-all", "--stream")
	want(t, rep, clientreport.Refuted, "", 3)
	if rep.Control != clientreport.ControlUnavailable || rep.Backed || len(rep.Legs) != 2 {
		t.Errorf("control %s backed %t legs %d", rep.Control, rep.Backed, len(rep.Legs))
	}
}

func TestNoGateIsSkipped(t *testing.T) {
	cli := sandboxtest.Docker(t)
	want(t, run(t, cli, clientrun.Options{}, "--policy", "no-gate"), clientreport.Skipped, clientreport.NoGate, 3)
}

func TestNeverListingIsSkipped(t *testing.T) {
	cli := sandboxtest.Docker(t)
	want(t, run(t, cli, clientrun.Options{}, "--policy", "no-list"), clientreport.Skipped, clientreport.NeverListed, 3)
}

// The listing changed between calls (beta turned read-only): the
// differential moved two variables.
func TestListingChangeIsErrored(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{Faults: twin.Faults{Drift: true}}, "--policy", "readonly-auto", "--list-twice")
	want(t, rep, clientreport.Errored, "", 2)
	if rep.HeldFixed.OK || !strings.Contains(rep.HeldFixed.Reason, "changed between calls") {
		t.Errorf("held fixed %+v", rep.HeldFixed)
	}
}

// A ledger that misses calls fails the self-test, whatever the client.
func TestBrokenLedgerIsErrored(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{Faults: twin.Faults{DropCalls: true}}, "--policy", "readonly-auto")
	want(t, rep, clientreport.Errored, "", 2)
	if rep.SelfTest.OK || !strings.Contains(rep.Reason, "self-test") {
		t.Errorf("self-test %+v: %s", rep.SelfTest, rep.Reason)
	}
}

// A client that never ends is stopped at the bound; it never asked the
// model, so nothing was decided.
func TestHangingClientIsBounded(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{Timeout: 2 * time.Second}, "--policy", "hang")
	want(t, rep, clientreport.Skipped, clientreport.CalledNeither, 3)
	a := leg(rep, "alpha")
	timeout := false
	for _, p := range a.Problems {
		timeout = timeout || p.Kind == "timeout"
	}
	if !a.Exit.TimedOut || !timeout {
		t.Errorf("exit %+v, problems %+v", a.Exit, a.Problems)
	}
}

// An adapter that says its client lacks a precondition is SKIPPED with
// it, and nothing runs.
func TestAdapterPreconditionIsSkipped(t *testing.T) {
	a, err := clientadapter.Parse([]byte(`{"name":"chat-only","api":"openai","missing":"no-mcp-support","missingReason":"it has no MCP client"}`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := clientrun.Run(context.Background(), nil, clientrun.Options{Adapter: a, Command: []string{"chat"}, Judge: clientverdict.Judge{}})
	if err != nil {
		t.Fatal(err)
	}
	want(t, rep, clientreport.Skipped, clientreport.NoMCPSupport, 3)
	if len(rep.Legs) != 0 {
		t.Errorf("legs ran: %d", len(rep.Legs))
	}
}

// A command line that approves everything is refused before anything
// runs.
func TestApproveAllIsRefused(t *testing.T) {
	a, _ := clientadapter.Builtin("gemini-cli")
	rep, err := clientrun.Run(context.Background(), nil, clientrun.Options{Adapter: a, Command: []string{"gemini", "--yolo"}, Judge: clientverdict.Judge{}})
	if err == nil || rep.Verdict != clientreport.Errored || len(rep.Legs) != 0 {
		t.Errorf("err %v, report %+v", err, rep.Decision)
	}
}

// The twin's ledger and the runner's channel are out of the client's
// reach: the twin, the client's parent and of its uid, cannot be opened
// through /proc.
func TestClientCannotReadTheTwin(t *testing.T) {
	cli := sandboxtest.Docker(t)
	rep := run(t, cli, clientrun.Options{NoControl: true}, "--policy", "peek")
	out := leg(rep, "alpha").Exit.Stdout
	for _, p := range []string{"mem", "environ", "fd/1", "fd/0"} {
		if !strings.Contains(out, "peek "+p+": permission denied") {
			t.Errorf("/proc/PARENT/%s was not refused:\n%s", p, out)
		}
	}
}

// A client that kills the twin ends the run: ERRORED, never a verdict
// the run did not earn.
func TestClientKillingTheTwinIsErrored(t *testing.T) {
	cli := sandboxtest.Docker(t)
	a, _ := clientadapter.Builtin("fixture")
	o := clientrun.Options{Adapter: a, Command: []string{fixtureMount, "--policy", "kill-parent"}, SessionOptions: sandbox.SessionOptions{Image: base(t, cli),
		Mounts: []sandbox.Mount{fixtureClient(t)}, Agent: sandboxtest.Agent(t), RunID: label.NewRunID()}, Timeout: 30 * time.Second, Judge: clientverdict.Judge{}}
	sandboxtest.NoLeftovers(t, cli, o.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := clientrun.Run(ctx, cli, o)
	if err == nil || rep.Verdict != clientreport.Errored || rep.ExitCode() != 2 {
		t.Errorf("err %v, verdict %s", err, rep.Verdict)
	}
}
