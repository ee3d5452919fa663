package clientrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientadapter"
	"github.com/mcpsandbox/mcpsandbox/sandbox/twin"
)

// Options configures a client test.
type Options struct {
	// SessionOptions are each leg's sandbox: the image the client runs
	// in, its code (Mounts, or Package at PackageTarget as for scan's
	// --package), Agent (the host path of mcpsandbox: the agent and the
	// twin), the limits, the run id, the progress Log, the StartTimeout.
	// Each leg sets Argv (the twin), Network (none) and CallTimeout
	// (Timeout and a margin). Env is the twin's; the client's is
	// ClientEnv.
	sandbox.SessionOptions
	// Command is the client's command (CLIENT_COMMAND [ARG...]); the
	// adapter's arguments follow it.
	Command []string
	Adapter *clientadapter.Adapter
	// TwinTransport is the twin's transport the client is pointed at (""
	// the adapter's default).
	TwinTransport string
	Prompt        string
	// ClientEnv is added to the client's environment (before the
	// adapter's).
	ClientEnv []string
	// Timeout bounds each client run (default DefaultTimeout).
	Timeout time.Duration
	// NoControl leaves out the positive control: a REFUTED is unbacked.
	NoControl bool
	// Faults break the twin, for the harness's own tests.
	Faults twin.Faults
	// Judge decides what the legs' observations mean, and their findings
	// (ci/clientverdict.Judge): the legs are observed here, judged there.
	// Required.
	Judge Judge
}

// Judge is the verdict the client test asks for, between its legs (a
// REFUTED runs the positive control) and at the end.
type Judge interface {
	Decide(clientreport.Inputs) clientreport.Decision
	Findings([]clientreport.LegRun) []report.Finding
}

// DefaultTimeout bounds a client run unless told otherwise.
const DefaultTimeout = 2 * time.Minute

// DefaultPrompt is what the client is asked, unless told otherwise.
const DefaultPrompt = "Use the note tool to write a short note, then stop."

// Home is the client's HOME: a directory the twin makes, fresh, in each
// leg's new container.
const Home = "/tmp/mcpsandbox-client/home"

// Run tests the client: the alpha and beta legs, the positive control on
// a REFUTED, the verdict. An error is an infrastructure failure (the
// report then says ERRORED and why).
func Run(ctx context.Context, cli sandbox.Engine, opts Options) (*clientreport.Report, error) {
	start := time.Now()
	if opts.Judge == nil {
		return nil, errors.New("clientrun: Options.Judge is required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Prompt == "" {
		opts.Prompt = DefaultPrompt
	}
	a := opts.Adapter
	rep := &clientreport.Report{Schema: clientreport.Schema, Legs: []clientreport.LegRun{}}
	rep.Client = clientreport.ClientInfo{Command: append([]string{}, opts.Command...), Adapter: a.Name, Image: opts.Image,
		API: a.API, Prompt: opts.Prompt, TimeoutMs: opts.Timeout.Milliseconds()}
	defer func() {
		rep.Findings = opts.Judge.Findings(rep.Legs)
		rep.Timing.TotalMs = time.Since(start).Milliseconds()
	}()
	in := clientreport.Inputs{SelfTest: clientreport.Check{OK: true}, HeldFixed: clientreport.Check{OK: true}}
	if a.Missing != "" {
		in.Missing, in.MissingReason = clientreport.Precondition(a.Missing), a.MissingReason
		if in.MissingReason == "" {
			in.MissingReason = "the adapter says the client lacks it"
		}
		rep.Decision = opts.Judge.Decide(in)
		return rep, nil
	}
	transport, err := a.Transport(opts.TwinTransport)
	if err != nil {
		return fail(rep, err)
	}
	rep.Client.Transport = transport
	r := &runner{opts: opts, cli: cli, transport: transport}
	if err := r.preflight(); err != nil {
		return fail(rep, err)
	}
	var listings []listing
	legs := map[string]*legResult{}
	for _, l := range []struct{ name, tool string }{{"alpha", twin.Alpha}, {"beta", twin.Beta}} {
		res, err := r.leg(ctx, l.name, l.tool, false)
		if res != nil {
			rep.Legs = append(rep.Legs, res.run)
			rep.SelfTest.Legs = append(rep.SelfTest.Legs, res.self)
			listings = append(listings, res.listings...)
			legs[l.name] = res
		}
		if err != nil {
			return fail(rep, err)
		}
	}
	in.Alpha, in.Beta = legs["alpha"].run.Observed, legs["beta"].run.Observed
	in.SelfTest = selfTestCheck(legs["alpha"], legs["beta"])
	in.HeldFixed, rep.HeldFixed.Listing = heldFixed(listings, legs["alpha"], legs["beta"])
	d := opts.Judge.Decide(in)
	if d.Verdict == clientreport.Refuted {
		switch {
		case opts.NoControl:
			in.ControlWhy = "the positive control was not run (--no-control)"
		case a.Trust == nil:
			in.ControlWhy = fmt.Sprintf("adapter %s has no way to mark a server trusted, so the control cannot run", a.Name)
		default:
			res, err := r.leg(ctx, "control", twin.Alpha, true)
			if res != nil {
				rep.Legs = append(rep.Legs, res.run)
				rep.SelfTest.Legs = append(rep.SelfTest.Legs, res.self)
			}
			if err != nil {
				return fail(rep, err)
			}
			obs := res.run.Observed
			in.Control = &obs
			in.SelfTest = selfTestCheck(legs["alpha"], legs["beta"], res)
			// The control's listing must be the legs' too.
			in.HeldFixed, rep.HeldFixed.Listing = heldFixed(append(listings, res.listings...), legs["alpha"], legs["beta"], res)
		}
		d = opts.Judge.Decide(in)
	}
	rep.Decision = d
	rep.SelfTest.Check, rep.HeldFixed.Check = in.SelfTest, in.HeldFixed
	return rep, nil
}

// Preflight checks, before anything runs, that the adapter renders for
// every leg and that neither it nor the client's command turns on a mode
// that approves everything.
func Preflight(opts Options) error {
	if opts.Adapter.Missing != "" {
		return nil
	}
	transport, err := opts.Adapter.Transport(opts.TwinTransport)
	if err != nil {
		return err
	}
	r := &runner{opts: opts, transport: transport}
	if r.opts.Prompt == "" {
		r.opts.Prompt = DefaultPrompt
	}
	return r.preflight()
}

func (r *runner) preflight() error {
	a := r.opts.Adapter
	for _, trusted := range []bool{false, true} {
		if trusted && a.Trust == nil {
			continue
		}
		rd, err := a.Render(r.vars(), trusted)
		if err != nil {
			return err
		}
		if err := clientadapter.Check(r.opts.Command, rd); err != nil {
			return err
		}
	}
	return nil
}

// fail makes rep ERRORED with err's reason and returns err.
func fail(rep *clientreport.Report, err error) (*clientreport.Report, error) {
	rep.Decision = clientreport.Decision{Verdict: clientreport.Errored, Reason: report.OneLine(err.Error()), Control: clientreport.ControlNotRun}
	return rep, err
}

type runner struct {
	opts      Options
	cli       sandbox.Engine
	transport string
}

func (r *runner) vars() clientadapter.Vars {
	return clientadapter.Vars{Prompt: r.opts.Prompt, ServerName: twin.ServerName, StdioCommand: agent.Path, StdioArg: twin.StdioArg,
		MCPURL: twin.MCPURL(), ModelURL: twin.ModelURL(), Home: Home, Workspace: overlay.Workspace, Transport: r.transport}
}

// legResult is one leg's evidence.
type legResult struct {
	run      clientreport.LegRun
	self     clientreport.SelfTestLeg
	listings []listing
	fresh    bool
}

// listing is a tools/list reply a client got.
type listing struct {
	leg string
	raw json.RawMessage
}

func nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *runner) logf(format string, a ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format+"\n", a...)
	}
}
