package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// Options configures a scan: each session's options, and the scan's
// own.
type Options struct {
	// SessionOptions are every session's of the scan (the main one,
	// --isolation call's, the replays'), as given but for what the scan
	// sets (scanner.sessionOptions and newScanner): RunID (default: a new
	// one), Log (the bait shown as its placeholders), and unless NoSeed
	// Env (the bait's first), Seeds (the bait's and the boundary
	// probes'), Secrets and Placeholders (the bait's). State is not with
	// IsolationCall; past the Disk bound the report has a disk problem
	// and a disk-bound-exceeded finding.
	sandbox.SessionOptions
	Probes []probes.Step
	// Timeout bounds the whole run (default 10m).
	Timeout time.Duration
	// Settle bounds the wait, after a call, while processes it left behind
	// still run (default 2s).
	Settle time.Duration
	// Linger keeps observing after the last call for this long (default
	// 3s; negative: not at all), so that what a call set off for later
	// (a timer, a thread, a child) is seen.
	Linger time.Duration
	// LingerMax bounds the linger while something the calls set off can
	// still act (default DefaultLingerMax); the linger ends at once when
	// the agent finds nothing in the sandbox that can act. Past it, a
	// linger-bound problem (and finding).
	LingerMax time.Duration
	// Idle, if set, is called as a session's linger begins, and what it
	// returns as the linger ends: the scan then only waits on the server,
	// so that a caller running scans side by side (bulk) can give its
	// share of the host to another meanwhile.
	Idle func() (resume func())
	// Suspects, when set, names the calls to replay once the calls are
	// made (see report.Replay): ci/gate gives rules.Suspects. Nil: no
	// replay (--no-replay).
	Suspects func(*report.Report) []int
	// MaxReplays bounds the calls replayed (default 16); a call past it
	// has its replay "skipped": nothing is pinned on it.
	MaxReplays int
	// ReplayJobs bounds the replays run side by side, two containers
	// each (default: two per core of the host).
	ReplayJobs int
	// NoSeed leaves out the canary workspace and the honeytokens.
	NoSeed bool
	// BaitSeed draws the canary's names and the honeytokens' values
	// (probes.NewBait); nil draws a random seed. The report shows the
	// bait as role placeholders and the seed under timing, so that the
	// same seed repeats a run exactly.
	BaitSeed *uint64
	// Negatives also calls each tool with inputs that break its schema,
	// one rule at a time.
	Negatives bool
	// NoBoundary leaves out the boundary probes: path properties given a
	// traversal out of the canary project, URL properties a link-local
	// and a loopback URL (see probes.WithBoundary).
	NoBoundary bool
	// Isolation is IsolationSession (default: one container, calls in
	// order) or IsolationCall (a fresh container from the same starting
	// state for each call, so that one tool's deletions cannot hide
	// another's effects).
	Isolation sandbox.Isolation
	// MaxLateTools bounds the tools that appear during the scan and are
	// called (default 50); MaxToolChanges the tool list changes the report
	// lists (default 1000). Past either, the report says so and the gate
	// fails (tool-list-unchecked).
	MaxLateTools, MaxToolChanges int
	// MaxRelistBytes bounds the bytes of tools/list results the listings
	// after calls and at sessions' ends read per scan (default 1 GiB);
	// past it no session lists again, the report says so and the gate
	// fails (tool-list-unchecked).
	MaxRelistBytes int64
	// OnKept, with Keep, is told of the main session's kept container
	// (not the replays'), to record it as a named run.
	OnKept func(sandbox.KeptSession)
	// Timings, if set, records where the run's time goes, each session on
	// a track of its own (--timings): never in the report.
	Timings *timings.Recorder
}

// Result is what a scan returns besides the report.
type Result struct {
	// Report holds the observations, normalized; its verdict (findings,
	// summary) is ci/verdict's to give.
	Report      *report.Report
	Transcript  *sandbox.Transcript
	ContainerID string // set when Keep left a container behind
	// Placeholders are the run's bait and the roles the report shows
	// instead (nil with NoSeed): for what is written besides the report,
	// the transcript above all, which holds the frames as sent.
	Placeholders []report.Placeholder
}

// ErrIncomplete marks a scan that could not run every step: the server did
// not start or died, the run timed out or was interrupted. The report is
// partial but still written.
var ErrIncomplete = errors.New("scan incomplete")

// Run starts the server in a sandbox, initializes it, lists its tools,
// calls them, and reports what happened: the observations, without a
// verdict. It always returns a report, partial on error; the error wraps
// ErrIncomplete or is an *InfraError when the scan could not run every
// step.
func Run(ctx context.Context, cli sandbox.Engine, opts Options) (Result, error) {
	sc, err := newScanner(ctx, cli, opts)
	if err != nil {
		return Result{Report: report.New()}, err
	}
	defer sc.cancel()
	var res Result
	switch sc.opts.Isolation {
	case sandbox.IsolationSession:
		res, err = sc.scanSession()
	case sandbox.IsolationCall:
		res, err = sc.scanPerCall()
	}
	rep := res.Report
	if !sc.opts.NoSeed {
		res.Placeholders = sc.bait.Placeholders()
	}
	rep.Sandbox.LingerMs = max(sc.opts.Linger, 0).Milliseconds()
	if sc.opts.Linger > 0 {
		rep.Sandbox.LingerMaxMs = sc.opts.LingerMax.Milliseconds()
	}
	rep.Sandbox.Replay = "not-run" // the scan did not run every step
	if errors.Is(err, sandbox.ErrSandboxLost) {
		// What was seen is kept, but it is no result.
		rep.Complete = false
		if !errors.Is(err, ErrIncomplete) {
			err = fmt.Errorf("%w: %w", ErrIncomplete, err)
		}
	} else {
		err = diskVerdict(rep, err)
	}
	if err == nil && !rep.Sandbox.DiskExceeded {
		end := sc.track.Begin(timings.StepReplays, 0)
		err = sc.replay(rep)
		end() // a replay's lost sandbox: incomplete (see replay)
		if sc.ctx.Err() != nil {
			// The run's bound ended the replays early: a call left
			// unreplayed keeps its effects unpinned, which is not a
			// complete scan.
			rep.Complete = false
			rep.Problems = append(rep.Problems, sc.why())
			err = fmt.Errorf("%w: %s", ErrIncomplete, sc.why().Message)
		}
	}
	// Replays begun during the linger and not taken (the scan failed, or
	// the final report chose otherwise) end before the scan does.
	sc.jobs.Wait()
	// Last, after teardown: the deterministic form, with what differs
	// between runs in Timing.
	if rep.Timing == nil {
		rep.Timing = &report.Timing{}
	}
	sc.finishToolLists(rep)
	// Measured after every session's teardown, the container's removal
	// included as far as it was waited for (past the deadline, at most
	// TeardownGrace: a removal left to the engine is a teardown problem).
	took := time.Since(sc.started)
	rep.Timing.StartedAt, rep.Timing.DurationMs = sc.started.UTC().Format(time.RFC3339), took.Milliseconds()
	if over := took - sc.opts.Timeout; sc.opts.Timeout > 0 && over > 0 {
		// How far past --timeout the run ended: under Timing, with what
		// differs between runs.
		rep.Timing.OverrunMs = over.Milliseconds()
	}
	if !sc.opts.NoSeed {
		seed := sc.bait.Seed
		rep.Timing.BaitSeed = &seed
	}
	return res, err
}

// scanner holds what one scan's sessions share.
type scanner struct {
	cli     sandbox.Engine
	opts    Options
	bait    probes.Bait
	started time.Time
	// parent is the caller's context; ctx adds the run's timeout.
	parent, ctx context.Context
	cancel      context.CancelFunc
	track       *timings.Track // the scan's own steps, outside its sessions
	mu          sync.Mutex     // guards reaped: replays open sessions side by side
	reaped      []report.Problem
	// args are the calls' arguments as sent, by seq: the report's are
	// redacted, and a replay must send the same bytes.
	args map[int]json.RawMessage
	tl   *toolLists // the tool list as the sessions saw it
	// schemas are the tools' input schemas, for the values offered to
	// their calls; state holds the values the current session's results
	// returned; setups are the setup calls that succeeded, in order, which
	// --isolation call replays before each call (see replaySetups).
	schemas map[string]json.RawMessage
	state   *probes.State
	setups  []setupCall
	// setupsOver is set once a setup call is past maxSetups.
	setupsOver bool
	// setupsOf are the setup calls replayed in the session whose first
	// call is the key, for a replay of its calls.
	setupsOf map[int][]probes.Call
	// lingerTook is the longest linger of the scan's sessions (under mu),
	// for its replays' legs.
	lingerTook time.Duration
	// times are the main session's calls' times, which its replays'
	// legs are measured against (see horizon).
	times *sessionTimes
	// early are the replays begun during the main session's linger, by
	// seq (see replayEarly); jobs counts every replay running, and
	// replaySem bounds them to ReplayJobs.
	early     map[int]*replayJob
	jobs      sync.WaitGroup
	replaySem chan struct{}
}

// setupCall is a setup call that succeeded: its seq and what it sent.
type setupCall struct {
	seq  int
	call probes.Call
}

// DefaultReplayJobs is ReplayJobs' default: two per core of the host.
func DefaultReplayJobs() int { return 2 * runtime.NumCPU() }

// maxSetups bounds the setup calls kept for replays, per scan.
const maxSetups = 16

func newScanner(ctx context.Context, cli sandbox.Engine, opts Options) (*scanner, error) {
	if opts.RunID == "" {
		opts.RunID = label.NewRunID()
	}
	if opts.Isolation == 0 {
		opts.Isolation = sandbox.IsolationSession
	}
	if opts.Isolation != sandbox.IsolationSession && opts.Isolation != sandbox.IsolationCall {
		return nil, &sandbox.InfraError{Cause: fmt.Sprintf("unknown isolation %v", opts.Isolation), Fix: "use session or call"}
	}
	if opts.State != nil && opts.Isolation == sandbox.IsolationCall {
		return nil, &sandbox.InfraError{Cause: "--state with --isolation call: each call starts from the same state, so no one call's changes are the state's", Fix: "use --isolation session with --state"}
	}
	if opts.Keep && opts.Isolation == sandbox.IsolationCall {
		// Each call has a container of its own: none is the scan's to
		// keep, print or name.
		return nil, &sandbox.InfraError{Cause: "--keep or --name with --isolation call: each call runs in a container of its own, so no one container is the scan's", Fix: "use --isolation session to keep the container"}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	if opts.LingerMax <= 0 {
		opts.LingerMax = DefaultLingerMax
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	if opts.MaxReplays <= 0 {
		opts.MaxReplays = 16
	}
	if opts.ReplayJobs <= 0 {
		// Two per core: a replay mostly waits (its linger, its window),
		// and its legs' containers start while others wait.
		opts.ReplayJobs = DefaultReplayJobs()
	}
	if opts.MaxLateTools <= 0 {
		opts.MaxLateTools = defaultMaxLateTools
	}
	if opts.MaxToolChanges <= 0 {
		opts.MaxToolChanges = defaultMaxToolChanges
	}
	if opts.MaxRelistBytes <= 0 {
		opts.MaxRelistBytes = DefaultMaxRelistBytes
	}
	sc := &scanner{cli: cli, opts: opts, started: time.Now(), replaySem: make(chan struct{}, opts.ReplayJobs), parent: ctx, args: map[int]json.RawMessage{}, tl: newToolLists(opts.MaxToolChanges, opts.MaxRelistBytes),
		schemas: map[string]json.RawMessage{}, state: &probes.State{}, setupsOf: map[int][]probes.Call{}}
	sc.ctx, sc.cancel = context.WithTimeout(ctx, opts.Timeout)
	sc.track = opts.Timings.Track(timings.SessionScan)
	if !opts.NoSeed {
		seed := probes.RandomSeed()
		if opts.BaitSeed != nil {
			seed = *opts.BaitSeed
		}
		// Planted now: the files' times count back from the start, and the
		// planted git index records them.
		sc.bait = probes.NewBait(seed).At(sc.started)
	}
	if opts.Log != nil {
		// The progress lines name arguments, tools and serverInfo: they
		// show the bait as the report does, and only valid UTF-8.
		lw := &logWriter{w: opts.Log}
		if !opts.NoSeed {
			lw.ps = sc.bait.Placeholders()
		}
		sc.opts.Log = lw
	}
	endReap := sc.track.Begin(timings.StepReap, 0)
	reaped, err := sandbox.ReapAll(sc.ctx, cli)
	endReap()
	if err != nil && sc.ctx.Err() == nil {
		// (A reap the run's bound cut is the run-timeout problem's to say.)
		sc.reaped = append(sc.reaped, report.Problem{Kind: "reap", Message: err.Error()})
	} else if len(reaped.Removed)+len(reaped.Stopped) > 0 {
		sc.logf("removed %d and stopped %d container(s) left by runs that died", len(reaped.Removed), len(reaped.Stopped))
	}
	return sc, nil
}

func (sc *scanner) logf(format string, args ...any) {
	if sc.opts.Log != nil {
		fmt.Fprintf(sc.opts.Log, format+"\n", args...)
	}
}

// why says why the run stopped early, for the problems list.
func (sc *scanner) why() report.Problem {
	if sc.parent.Err() != nil {
		return report.Problem{Kind: "interrupted", Message: "the run was interrupted (" + context.Cause(sc.parent).Error() + ")"}
	}
	return report.Problem{Kind: "run-timeout", Message: fmt.Sprintf("the run exceeded --timeout %s", sc.opts.Timeout)}
}

// sessionOptions are a session's options: the scan's SessionOptions,
// with the run's bait (unless NoSeed) planted in it. Each session gets its
// own Env.
func (sc *scanner) sessionOptions() sandbox.SessionOptions {
	so := sc.opts.SessionOptions
	so.Env = append([]string{}, so.Env...)
	if !sc.opts.NoSeed {
		so.Env = append(sc.bait.Env(), so.Env...)
		so.Seeds = append(sc.bait.Seeds(), sc.boundarySeeds()...)
		so.Secrets = sc.bait.Find
		so.Placeholders = sc.bait.Placeholders()
	}
	return so
}

// open starts one session, named name in the timings (see
// timings.SessionMain), with the scan's options and the run's bait. Only
// the main session keeps its container with Keep: a replay's would be
// left stopped on the engine, printed and recorded nowhere.
func (sc *scanner) open(name string) (*sandbox.Session, error) {
	so := sc.sessionOptions()
	so.Keep = so.Keep && name == timings.SessionMain
	so.Timings = sc.opts.Timings.Track(name)
	s, err := sandbox.Open(sc.ctx, sc.cli, so)
	sc.mu.Lock()
	s.Report().Problems = append(s.Report().Problems, sc.reaped...)
	sc.reaped = nil
	sc.mu.Unlock()
	return s, err
}

// close ends a session: its teardown, then the report's deterministic
// form (process ids are per container, so each session is normalized on
// its own). The bait becomes placeholders first, so that what is sorted
// by path or argv sorts the same whatever was drawn.
func (sc *scanner) close(s *sandbox.Session, err *error) {
	sc.stopWatch(s)
	cerr := s.Close(sc.ctx)
	if errors.Is(*err, sandbox.ErrSandboxLost) {
		cerr = s.TeardownErr() // the loss is said once
	}
	*err = errors.Join(*err, cerr)
	s.Report().Sanitize()
	if !sc.opts.NoSeed {
		s.Report().Redact(sc.bait.Placeholders())
	}
	s.Report().Normalize()
}

// scanSession runs every call in one session.
func (sc *scanner) scanSession() (res Result, err error) {
	s, err := sc.open(timings.SessionMain)
	sc.times = &sessionTimes{s: s, opened: time.Now(), calls: map[int]*callTimes{}}
	res = Result{Report: s.Report(), Transcript: s.Transcript()}
	defer func() {
		sc.close(s, &err)
		res.ContainerID = s.Kept()
		if res.ContainerID != "" && sc.opts.OnKept != nil {
			sc.opts.OnKept(s.KeptInfo())
		}
	}()
	if err != nil {
		sc.startCut(s.Report())
		return res, sc.startError(err)
	}
	tools, err := sc.list(s)
	if err != nil {
		return res, err
	}
	s.Report().Tools = tools
	sc.watchFirst(s, s.Report())
	plan := sc.plan(s.Report())
	if err := sc.callAll(s, plan, 0); err != nil {
		return res, err
	}
	sc.endListing(s)
	if err := sc.surfaces(s); err != nil {
		return res, err
	}
	if sc.ctx.Err() != nil {
		// The run's bound ended the linger or a surface's listing early
		// (each returns quietly): what came later was not seen. As
		// --isolation call has it.
		s.Report().Problems = append(s.Report().Problems, sc.why())
		return res, fmt.Errorf("%w: %s", ErrIncomplete, sc.why().Message)
	}
	s.Report().Complete = true
	return res, nil
}

// startError is what a session that did not start means for the scan. A
// start the run's bound (or an interrupt) cut short, however the engine
// words it, is the run ending early, as a call it cuts is: incomplete,
// never an engine failure. The caller says why in the report
// (startCut).
func (sc *scanner) startError(err error) error {
	if sc.ctx.Err() != nil && !errors.Is(err, sandbox.ErrSandboxLost) {
		return fmt.Errorf("%w: %s: %w", ErrIncomplete, sc.why().Message, err)
	}
	if errors.Is(err, sandbox.ErrServerStart) {
		return fmt.Errorf("%w: %w", ErrIncomplete, err)
	}
	return err
}

// startCut records in rep why the first session did not start when the
// run's bound or an interrupt is the reason (see startError).
func (sc *scanner) startCut(rep *report.Report) {
	if sc.ctx.Err() != nil {
		rep.Problems = append(rep.Problems, sc.why())
	}
}

// list lists the tools and closes the tools/list phase.
func (sc *scanner) list(s *sandbox.Session) ([]report.Tool, error) {
	tools, err := s.ListTools(sc.ctx)
	if err != nil {
		if sc.ctx.Err() != nil {
			s.Report().Problems = append(s.Report().Problems, sc.why())
		} else {
			s.Problem("protocol", 0, "tools/list failed: %s", err)
		}
		return nil, fmt.Errorf("%w: listing tools: %w", ErrIncomplete, err)
	}
	sc.logf("listed %d tool(s)", len(tools))
	s.Phase(sc.ctx, "tools/list", 0)
	return tools, nil
}

// plan orders the calls for rep's tools, recording skips in rep.
func (sc *scanner) plan(rep *report.Report) []probes.Call { return sc.planTools(rep, rep.Tools) }

// planTools orders the calls for tools, recording skips in rep; probe
// steps that name no tool of them are remembered, and made problems at
// the end if the tool never appears.
func (sc *scanner) planTools(rep *report.Report, tools []report.Tool) []probes.Call {
	ptools := make([]probes.Tool, len(tools))
	isTrue := func(b *bool) bool { return b != nil && *b }
	for i, t := range tools {
		ptools[i] = probes.Tool{Name: t.Name, InputSchema: t.InputSchema, Idempotent: isTrue(t.Hints.Idempotent),
			ReadOnly: isTrue(t.Hints.ReadOnly), NonDestructive: t.Hints.Destructive != nil && !*t.Hints.Destructive,
			Destructive: isTrue(t.Hints.Destructive) && !isTrue(t.Hints.ReadOnly)}
		sc.schemas[t.Name] = t.InputSchema
	}
	canary := probes.DefaultCanary()
	if !sc.opts.NoSeed {
		canary = sc.bait.Canary
	}
	plan, skips, unknown := probes.Plan(ptools, sc.opts.Probes, canary)
	if sc.opts.Negatives {
		plan = probes.WithNegatives(ptools, plan)
	}
	plan = sc.withBoundary(ptools, plan, canary)
	for _, s := range skips {
		rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: s.Reason})
	}
	sc.tl.noteUnknown(unknown)
	return plan
}

// runCalls makes the planned calls in s, numbered from first+1, each
// followed by its effects and, when it left processes running, a settle.
// It stops at the first call that ends the session (a crash, a server
// that answers nothing, the run's end), listing the rest as not called.
// A call's id-like arguments take the values earlier results returned
// (sc.state); a call the server refuses as invalid is followed by a retry
// with the next candidate arguments, so the plan may grow.
func (sc *scanner) runCalls(s *sandbox.Session, plan []probes.Call, first int) error {
	rep := s.Report()
	plan = slices.Clone(plan)
	notReached := func(rest []probes.Call, why string) {
		for _, c := range rest {
			rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: c.Tool, Reason: "not reached: " + why})
		}
	}
	var base *quietBase // what could act before the first call
	if sc.opts.Linger > 0 {
		base = sc.readBase(s)
	}
	times := sc.times.timed(s)
	for i := 0; i < len(plan); i++ {
		step := plan[i]
		if sc.ctx.Err() != nil {
			rep.Problems = append(rep.Problems, sc.why())
			notReached(plan[i:], sc.why().Message)
			return fmt.Errorf("%w: %s", ErrIncomplete, sc.why().Message)
		}
		seq := first + i + 1
		s.Phase(sc.ctx, "between", seq-1)
		times.closed(seq - 1)
		var from []int
		if step.Offer {
			var args json.RawMessage
			if args, from = sc.offer(step.Tool, step.Arguments, rep.Calls); from != nil {
				follow(plan[i+1:], step.Tool, step.Arguments, args)
				step.Arguments = args
			}
		}
		sc.logf("call %d: %s %s", seq, step.Tool, step.Arguments)
		ct := times.sent(seq)
		call := s.Call(sc.ctx, sandbox.CallRequest{Seq: seq, Tool: step.Tool, Arguments: step.Arguments, Source: step.Source, Negative: step.Negative})
		if ct != nil {
			ct.answered = time.Now()
		}
		call.Retries, call.Setup, call.ValuesFrom = step.Retries, step.Setup, from
		call.Boundary = boundaryOutcome(step, call, s.Structured())
		call.Effects = s.Mark(sc.ctx, true, seq)
		if bg := s.Background(); len(bg) > 0 && call.ErrorKind != "transport" {
			// Let what the call left running finish, so that its effects land
			// in a "between" phase after this call, not on the next one.
			sc.logf("call %d left %d process(es) running; settling up to %s", seq, len(bg), sc.opts.Settle)
			if left := s.Settle(sc.ctx, sc.opts.Settle); len(left) > 0 {
				s.Problem("background", seq, "%d process(es) started by call %d still ran after --settle %s; what they do later is attributed to later phases", len(left), seq, sc.opts.Settle)
			}
		}
		rep.Calls = append(rep.Calls, call)
		base.follow(s)
		sc.args[seq] = step.Arguments
		if err := s.LostErr(sc.ctx, seq); err != nil {
			// Nothing after this is the server's: the calls left are not
			// made, and what was seen until now is kept.
			notReached(plan[i+1:], "the sandbox was lost")
			return err
		}
		if report.Succeeded(call) {
			if step.Boundary == nil { // what a path out of bounds listed is no id for later calls
				sc.state.Harvest(seq, step.Tool, call.Result, s.Structured())
			}
			if step.Setup && sc.opts.Isolation == sandbox.IsolationCall {
				if len(sc.setups) < maxSetups {
					sc.setups = append(sc.setups, setupCall{seq: seq, call: step})
				} else if !sc.setupsOver {
					sc.setupsOver = true
					s.Problem("probe", seq, "more than %d setup calls: from call %d on, a setup call is not replayed before the calls after it", maxSetups, seq)
				}
			}
		} else if r, ok := retryOf(step, call, sc.repairer(step.Tool), sc.learner(step.Tool)); ok {
			follow(plan[i+1:], step.Tool, step.Arguments, r.Arguments)
			plan = slices.Insert(plan, i+1, r)
		}
		sc.relist(s, call)
		if step.ExpectError && step.Negative == "" && report.Succeeded(call) {
			s.Problem("probe", seq, "call %d to %s was expected to fail and succeeded", seq, step.Tool)
		}
		switch call.ErrorKind {
		case "interrupted":
			rep.Problems = append(rep.Problems, sc.why())
			notReached(plan[i+1:], sc.why().Message)
			return fmt.Errorf("%w: %s", ErrIncomplete, sc.why().Message)
		case "timeout":
			s.Problem("timeout", seq, "%s", call.Error)
			// One stuck handler is the tool's problem; a server that answers
			// nothing at all (stdout closed, wedged) ends the scan instead of
			// costing a timeout per remaining call.
			if perr := s.Ping(sc.ctx, 3*time.Second); perr != nil && sc.ctx.Err() == nil {
				msg := fmt.Sprintf("the server stopped answering after call %d (not even ping): stdout closed or the server is wedged", seq)
				s.Problem("unresponsive", seq, "%s", msg)
				notReached(plan[i+1:], msg)
				return fmt.Errorf("%w: %s", ErrIncomplete, msg)
			}
		case "transport":
			if s.DiskStopped() {
				return sc.diskStop(s, seq, plan[i+1:])
			}
			// The connection is gone: the server died or closed stdout.
			msg, kind := fmt.Sprintf("the server closed the connection during call %d", seq), "crash"
			if why, ok := s.ClientClosed(); ok {
				// Not the server's doing: the client could not read it.
				msg, kind = fmt.Sprintf("%s during call %d", why, seq), "protocol"
			} else if st, exited := s.Exited(sc.ctx); exited {
				msg = fmt.Sprintf("the server exited with code %d during call %d", st.ExitCode, seq)
				if st.OOMKilled {
					msg += " (killed by the memory limit)"
				}
			}
			s.Problem(kind, seq, "%s", msg)
			notReached(plan[i+1:], msg)
			return fmt.Errorf("%w: %s", ErrIncomplete, msg)
		}
	}
	// What the last call left running or set off for later did in the
	// linger window is a "between" phase of that call, not a teardown
	// effect (a replay checks that it is the call's).
	if !sc.lateCallsPending(s) { // else the late tools' calls come first
		if times != nil && sc.opts.Suspects != nil && sc.opts.Idle == nil && sc.opts.Linger > 0 {
			// In bulk (Idle) the linger's time goes to the next package.
			sc.replayEarly(rep, first+len(plan))
		}
		sc.linger(s, base, first+len(plan))
	}
	s.Phase(sc.ctx, "between", first+len(plan))
	times.closed(first + len(plan))
	return nil
}

// repairer reads a refusal of tool's arguments for what to change (see
// probes.RepairIn), with paths into the run's canary.
func (sc *scanner) repairer(tool string) func(json.RawMessage, string) (json.RawMessage, bool) {
	return sc.fromError(tool, probes.RepairIn)
}

// learner reads what properties a tool whose schema names none asks for
// in its error (see probes.LearnIn).
func (sc *scanner) learner(tool string) func(json.RawMessage, string) (json.RawMessage, bool) {
	return sc.fromError(tool, probes.LearnIn)
}

// fromError is f, which reads a call's error for new arguments, bound to
// the scan's canary and the tool's schema.
func (sc *scanner) fromError(tool string, f func(probes.Canary, string, json.RawMessage, json.RawMessage, string) (json.RawMessage, bool)) func(json.RawMessage, string) (json.RawMessage, bool) {
	canary := probes.DefaultCanary()
	if !sc.opts.NoSeed {
		canary = sc.bait.Canary
	}
	return func(args json.RawMessage, errText string) (json.RawMessage, bool) {
		return f(canary, tool, sc.schemas[tool], args, errText)
	}
}

// follow gives the repeats right after a call (which repeat it to check
// idempotentHint) the arguments the call was made with at last: with the
// values offered, or a retry's.
func follow(rest []probes.Call, tool string, old, args json.RawMessage) {
	for i := range rest {
		if rest[i].Source != "repeat" || rest[i].Tool != tool {
			return
		}
		if bytes.Equal(rest[i].Arguments, old) {
			rest[i].Arguments = args
		}
	}
}

// retryOf is the retry of a call the server refused as invalid (see
// probes.Refused), or of a call with no arguments that failed, with the
// next candidate arguments, if there is one
// left: at most probes.MaxCandidates-1 retries per planned call.
//
// The retry's arguments are those repair (nil: none) makes of the call's
// and its error (see probes.RepairIn), else the next candidate; either
// way a retry uses up a candidate, so that retries stay bounded.
//
// A tool whose schema names no property has no other candidate: its call
// is retried once (not a retry's) with the properties its error asks for
// (learn: see probes.LearnIn).
func retryOf(step probes.Call, call report.Call, repair, learn func(args json.RawMessage, errText string) (json.RawMessage, bool)) (probes.Call, bool) {
	learning := len(step.Alternatives) == 0 && (step.Source == "empty" || step.Source == "synth") && learn != nil
	if len(step.Alternatives) == 0 && !learning {
		return probes.Call{}, false
	}
	code := 0
	text := call.Result
	if call.ErrorKind == "rpc" {
		fmt.Sscanf(call.Error, "JSON-RPC error %d:", &code)
		text = call.Error
	} else if call.ErrorKind != "" {
		return probes.Call{}, false // a timeout, a crash: not a refusal
	}
	// A call with no arguments ({}: the tool requires none) that failed
	// lacked something its optional properties say, whatever the error's
	// words ("Provide one of: ...", a default URL that cannot be fetched
	// offline): it is retried with them, unless the method itself is
	// wanting.
	failed := call.IsError || call.FailsBy != "" || call.ErrorKind == "rpc"
	emptyFailed := step.Source == "empty" && failed && code != codeMethodNotFound && !strings.Contains(text, methodNotFound)
	var repaired json.RawMessage
	if learning {
		if !failed || code == codeMethodNotFound {
			return probes.Call{}, false
		}
		learnt, ok := learn(step.Arguments, text)
		if !ok {
			return probes.Call{}, false
		}
		r := step
		r.Arguments, r.Source, r.Retries = learnt, "retry", call.Seq
		return r, true
	}
	if repair != nil && failed && code != codeMethodNotFound {
		repaired, _ = repair(step.Arguments, text)
	}
	// An error that asks for what the call left out, or lists what it
	// takes instead of a value sent, is a refusal whatever its words.
	if !emptyFailed && repaired == nil && !probes.Refused(code, failed, text) {
		return probes.Call{}, false
	}
	r := step
	r.Arguments, r.Alternatives = step.Alternatives[0], step.Alternatives[1:]
	if repaired != nil {
		r.Arguments = repaired
	}
	r.Source, r.Retries = "retry", call.Seq
	return r, true
}

// JSON-RPC's method not found, as a code and as the TypeScript SDK words
// it in an isError result: no argument fixes it.
const (
	codeMethodNotFound = -32601
	methodNotFound     = "MCP error -32601:"
)

// startedPIDs are the processes this session's calls started (kernel
// pids: the report's are normalized only at the session's end), best
// first, and the seq of the call that started them: those of the latest
// setup call (see probes.IsSetup) that started any, else of the latest
// call that did, live ones before those that exited, each in
// the order they ran (the one the call spawned before what that
// spawned). Neither the sandbox's init (pid 1) nor the server (a child
// of init) is ever among them.
func startedPIDs(calls []report.Call) ([]int, int) {
	// A setup call's first (start_process): the process meant to be read
	// and ended; else any call's (a helper the server ran).
	if pids, seq := startedBy(calls, func(c report.Call) bool { return c.Setup }); len(pids) > 0 {
		return pids, seq
	}
	return startedBy(calls, func(report.Call) bool { return true })
}

// startedBy is startedPIDs over the calls that pass keep.
func startedBy(calls []report.Call, keep func(report.Call) bool) ([]int, int) {
	for i := len(calls) - 1; i >= 0; i-- {
		if !keep(calls[i]) {
			continue
		}
		var live, exited []int
		for _, p := range calls[i].Effects.Processes {
			if p.PID <= 1 || p.PPID <= 1 || p.ExecError != "" || slices.Contains(live, p.PID) || slices.Contains(exited, p.PID) {
				continue
			}
			if p.ExitCode == nil {
				live = append(live, p.PID)
			} else {
				exited = append(exited, p.PID)
			}
		}
		if out := append(live, exited...); len(out) > 0 {
			return out, calls[i].Seq
		}
	}
	return nil, 0
}

// offer gives a call's arguments the values earlier results returned
// (see probes.State.Offer), but never to a process-id property (see
// probes.PIDLike): a pid a result named may be the server's own (a status
// dump) and a kill tool given it would end the scan for no fault of the
// tool. A pid property takes instead the first process the latest call
// that started any started (see startedPIDs), or keeps its synthesized
// value (probes.NoPID: no process has it). It returns the arguments and
// the seqs of the calls whose results or processes they took.
func (sc *scanner) offer(tool string, planned json.RawMessage, calls []report.Call) (json.RawMessage, []int) {
	schema := sc.schemas[tool]
	args, from := sc.state.Offer(schema, planned)
	var pm, am map[string]json.RawMessage
	if json.Unmarshal(planned, &pm) != nil || json.Unmarshal(args, &am) != nil || pm == nil || am == nil {
		return args, from
	}
	var pidKeys []string
	for k := range am {
		if probes.PIDLike(k) {
			pidKeys = append(pidKeys, k)
		}
	}
	if len(pidKeys) == 0 {
		return args, from
	}
	sort.Strings(pidKeys)
	touched := false
	for _, k := range pidKeys {
		if v, ok := pm[k]; ok {
			touched = touched || !bytes.Equal(am[k], v)
			am[k] = v
		} else {
			touched = true
			delete(am, k) // an optional pid the state added
		}
	}
	if touched {
		from = sc.fromValues(am, pm)
	}
	if pids, seq := startedPIDs(calls); len(pids) > 0 {
		withPID := maps.Clone(am)
		for _, k := range pidKeys {
			if _, ok := withPID[k]; !ok {
				continue
			}
			enc := mustJSON(pids[0])
			if len(withPID[k]) > 0 && withPID[k][0] == '"' {
				enc = mustJSON(fmt.Sprint(pids[0]))
			}
			withPID[k] = enc
		}
		if b, err := json.Marshal(withPID); err == nil && probes.Validate(schema, b) == nil {
			am = withPID
			if !slices.Contains(from, seq) {
				from = append(from, seq)
			}
		}
	}
	b, err := json.Marshal(am)
	if err != nil || probes.Validate(schema, b) != nil {
		return planned, nil
	}
	if len(from) == 0 {
		return planned, nil
	}
	sort.Ints(from)
	return b, from
}

// fromValues are the seqs of the calls whose values the state gave to
// the properties of am that differ from planned pm: for each, the latest
// value equal to it.
func (sc *scanner) fromValues(am, pm map[string]json.RawMessage) []int {
	var from []int
	vals := sc.state.Values()
	for k, v := range am {
		if bytes.Equal(v, pm[k]) {
			continue
		}
		for i := len(vals) - 1; i >= 0; i-- {
			x := vals[i].Value
			if bytes.Equal(mustJSON(x), v) || bytes.Equal(mustJSON(fmt.Sprint(x)), v) {
				if !slices.Contains(from, vals[i].From) {
					from = append(from, vals[i].From)
				}
				break
			}
		}
	}
	return from
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
