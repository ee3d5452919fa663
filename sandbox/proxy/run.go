package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
)

// RunOptions configure `mcpsandbox run`: one server in one sandbox, for
// as long as a client uses it, over the proxy's own stdio.
type RunOptions struct {
	// Session is the container, the agent, the workspace and the limits,
	// as for a scan. Its Workspace, with SamePath, is seen at the host's
	// absolute path instead of /workspace; its State keeps the server's
	// own files outside the workspace from one run to the next (--state);
	// its AllowHosts (--allow-host) are the policy's allowed hosts too,
	// so that reaching them is no open-world finding. Not embedded: run's
	// own Log and Secrets are not the session's.
	Session sandbox.SessionOptions
	// SamePath mounts the workspace at its absolute host path, so that the
	// paths a client sends in arguments are the server's too. Without it,
	// the client's file roots under the workspace are translated to
	// /workspace.
	SamePath bool
	// Hints is what the client is told of the tools' safety hints
	// (default HintsVerified).
	Hints HintMode
	// Verdict holds the policy: the rules' severities and ignores, and
	// what run does about a finding (Policy.Run: log, correct, deny).
	Verdict verdict.Config
	// Preload are an earlier scan's findings (--verdicts): a known liar's
	// hints are corrected, or its calls denied, before its first call.
	Preload []report.Finding
	// Secrets name environment variables of Session.Env whose values are
	// watched as honeytokens are (no canary is planted in run).
	Secrets []string
	// PhaseInterval is how often, while no call runs, what the server
	// does on its own is collected as a "between" phase (default
	// DefaultPhaseInterval; negative: only at the end).
	PhaseInterval time.Duration
	// StaleAfter ends, for its effects, a call the server has not answered
	// for this long (default DefaultStaleAfter; negative: never): one call
	// left hanging must not make every later call an overlap. Checked
	// every PhaseInterval.
	StaleAfter time.Duration
	// Stdin and Stdout are the client's stream: MCP only is written to
	// Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// Log receives one JSON line per record (RunRecord); Notice a short
	// human line for each (stderr). Either may be nil.
	Log, Notice io.Writer
	// OnRecord, if set, sees each record once written.
	OnRecord func(RunRecord)
	// Name, if set, makes this a named run: its container is kept,
	// stopped, and recorded in Store with the workspace's baseline, for
	// `changes`, `apply` and `clean` (empty: the container is removed,
	// as with --rm).
	Name string
	// Store is where a named run is recorded (zero: runs.DefaultStore).
	Store runs.Store
	// ClientQueue and ClientQueueBytes bound the messages waiting for the
	// client to read them (defaults DefaultClientQueue and
	// DefaultClientQueueBytes): a server that fills the queue ends the
	// session with a flood problem, and run never blocks on the client.
	ClientQueue      int
	ClientQueueBytes int64
	// JudgeWait bounds how long a call waits for the effects of the calls
	// before it to be read and judged (DefaultJudgeWait when zero;
	// negative: as long as it takes); past it the call is refused.
	JudgeWait time.Duration
}

// DefaultPhaseInterval is how often run collects, between calls, what the
// server does on its own.
const DefaultPhaseInterval = 2 * time.Second

// DefaultStaleAfter is how long run waits for a call's answer before it
// ends the call for its effects.
const DefaultStaleAfter = 60 * time.Second

// RunResult is what a run leaves: the session's report (phases, problems,
// the server's exit), for the caller to show or keep.
type RunResult struct {
	Report *report.Report
	// Ended says why: the client closed its stdin, the server exited, or
	// the run was interrupted.
	Ended string
}

// Run starts the server in a sandbox and relays the client's MCP session
// to it until the client closes its stdin, the server exits or ctx ends;
// then the container is stopped and removed (teardown: see endRun) and
// the log has the last record.
func Run(ctx context.Context, cli sandbox.Engine, opts RunOptions) (RunResult, error) {
	so, roots, watch, err := opts.sessionOptions()
	if err != nil {
		return RunResult{}, err
	}
	log := &runLog{jsonl: opts.Log, human: opts.Notice, hook: opts.OnRecord, redact: watch.placeholders}
	named, err := opts.startNamed(so)
	if err != nil {
		return RunResult{}, err
	}
	if named != nil {
		so.Keep = true
	}
	notes := newAmbNotes()
	so.Ambiguity = ambiguityLogger(so.Ambiguity, notes, log)
	log.record(RunRecord{Type: "start", Message: strings.Join(so.Argv, " ")}, "starting "+report.OneLine(strings.Join(so.Argv, " "))+" in a sandbox")
	// As a scan does: containers of runners that died are removed, and a
	// kept one still running is stopped.
	if reaped, err := sandbox.ReapAll(ctx, cli); err != nil {
		log.record(RunRecord{Type: "problem", Reason: "reap", Message: err.Error()}, "reap: "+report.OneLine(err.Error()))
	} else if n := len(reaped.Removed) + len(reaped.Stopped); n > 0 {
		msg := fmt.Sprintf("removed %d and stopped %d container(s) left by runs that died", len(reaped.Removed), len(reaped.Stopped))
		log.record(RunRecord{Type: "reap", Message: msg}, msg)
	}
	s, stdio, err := sandbox.OpenRaw(ctx, cli, so)
	res := RunResult{Report: s.Report()}
	if err != nil {
		res.Ended = "the server did not start"
		endRun(ctx, s, log, named, res.Ended, nil)
		return res, err
	}
	// The sandbox's startup, before the server's first word: judged with
	// the handshake's, before the client has an answer.
	startup := slices.Clone(s.Report().Phases)
	namedStarted(named, s, log)
	interval := opts.PhaseInterval
	if interval == 0 {
		interval = DefaultPhaseInterval
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	opts.StaleAfter = max(opts.StaleAfter, 0)
	var m marker = s
	if opts.SamePath && so.Package != "" {
		m = samePathMarker{s, so.PackageTarget}
	}
	verd := opts.Verdict
	verd.Policy.AllowedHosts = slices.Clone(verd.Policy.AllowedHosts)
	for _, h := range so.AllowHosts {
		verd.Policy.AllowedHosts = append(verd.Policy.AllowedHosts, h.Host)
	}
	r := newRelay(m, relayOptions{Hints: opts.Hints, Verdict: verd, Preload: opts.Preload, PhaseInterval: max(interval, 0),
		StaleAfter: opts.StaleAfter, Secrets: so.Secrets, Watch: watch, Roots: roots, Log: log, Expect: s.ExpectAnswer, Answered: s.Answered,
		MaxTools: so.Bounds.WithDefaults().MaxTools, Notes: notes, Startup: startup, StartBound: so.StartTimeout,
		ClientQueue: opts.ClientQueue, ClientQueueBytes: opts.ClientQueueBytes, JudgeWait: opts.JudgeWait})
	why := r.run(ctx, opts.Stdin, opts.Stdout, stdio.Reader, stdio.Writer)
	switch {
	case ctx.Err() != nil:
		res.Ended = "interrupted: " + context.Cause(ctx).Error()
	default:
		res.Ended = why.Error()
	}
	endRun(ctx, s, log, named, res.Ended, r)
	if s.Lost() != nil {
		// A run whose sandbox someone else removed, killed or paused is
		// no result: the runner exits 2, as scan does.
		return res, s.Lost()
	}
	return res, nil
}

// endRun is the one place a run's container goes: the session's teardown
// (stdin closed, a moment to exit, killed, the last effects read,
// removed unless SessionOptions.Keep), then the end record with the teardown's
// effects and the session's problems; the relay (nil: none ran) judges
// the teardown. A named run's container is kept, stopped, and its record
// says where.
func endRun(ctx context.Context, s *sandbox.Session, log *runLog, named *runs.Named, why string, r *relay) {
	err := s.Close(ctx)
	namedEnded(named, s, log)
	rep := s.Report()
	if r != nil {
		r.judgeEnd(ctx, rep)
	}
	rec := RunRecord{Type: "end", Reason: why, Problems: rep.Problems, Container: s.Kept()}
	if n := len(rep.Phases); n > 0 && rep.Phases[n-1].Name == "teardown" {
		e := rep.Phases[n-1].Effects
		rec.Effects = &e
	}
	if rep.Server.ExitCode != nil {
		rec.Message = fmt.Sprintf("the server exited with code %d", *rep.Server.ExitCode)
	}
	human := "ended: " + why
	if err != nil {
		human += "; teardown: " + report.OneLine(err.Error())
	}
	for _, p := range rep.Problems {
		log.record(RunRecord{Type: "problem", Seq: p.Call, Reason: p.Kind, Message: p.Message}, p.Kind+": "+report.OneLine(p.Message))
	}
	log.record(rec, human)
}

// startNamed records the named run (nil: the run is not named).
func (o RunOptions) startNamed(so sandbox.SessionOptions) (*runs.Named, error) {
	if o.Name == "" {
		return nil, nil
	}
	st := o.Store
	if st.Root == "" {
		var err error
		if st, err = runs.DefaultStore(); err != nil {
			return nil, err
		}
	}
	return runs.Begin(st, o.Name, so)
}

// namedStarted records the running container of a named run (n nil: not
// named).
func namedStarted(n *runs.Named, s *sandbox.Session, log *runLog) {
	if n == nil {
		return
	}
	if err := n.Started(s); err != nil {
		log.record(RunRecord{Type: "problem", Reason: "run-store", Message: err.Error()}, "run-store: "+report.OneLine(err.Error()))
	}
}

// namedEnded records the kept, stopped container of a named run.
func namedEnded(n *runs.Named, s *sandbox.Session, log *runLog) {
	if n == nil {
		return
	}
	k := s.KeptInfo()
	msg, err := n.Kept(k)
	if err != nil {
		log.record(RunRecord{Type: "problem", Reason: "run-store", Message: err.Error()}, "run-store: "+report.OneLine(err.Error()))
		return
	}
	if msg == "" {
		return // no container was made: nothing kept, the name is free
	}
	log.record(RunRecord{Type: "kept", Message: n.Name(), Container: k.Container}, msg)
}

// sessionOptions are the session's options for a run, the roots to
// translate (nil: none) and the values watched as honeytokens.
func (o RunOptions) sessionOptions() (sandbox.SessionOptions, *rootMap, *watchSet, error) {
	so := o.Session
	if so.RunID == "" {
		so.RunID = label.NewRunID()
	}
	if o.Stdin == nil || o.Stdout == nil {
		return so, nil, nil, errors.New("run: no client stream")
	}
	w, err := watched(so.Env, o.Secrets)
	if err != nil {
		return so, nil, nil, err
	}
	so.Secrets, so.Placeholders = w.find, w.placeholders()
	var roots *rootMap
	if so.Workspace != "" {
		abs, err := filepath.Abs(so.Workspace)
		if err != nil {
			return so, nil, nil, fmt.Errorf("run: the workspace: %w", err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if o.SamePath {
			// Seen where the host has it: mounted as the package is,
			// copy-on-write, its changes effects in the workspace's scope
			// (samePathMarker).
			if so.Package != "" {
				return so, nil, nil, &sandbox.InfraError{Cause: "--same-path and --package together", Fix: "mount the server's code with --mount"}
			}
			so.Package, so.PackageTarget, so.Workspace, so.PackageIsWorkspace = abs, abs, "", true
		} else {
			roots = &rootMap{Host: abs, Target: overlay.Workspace}
		}
	}
	return so, roots, w, nil
}

// watched is the watch set of the secrets named, with their values
// (empty when none is named: elicitations' answers join it later).
func watched(env, names []string) (*watchSet, error) {
	w := newWatchSet()
	for _, n := range names {
		i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, n+"=") })
		if i < 0 {
			return nil, &sandbox.InfraError{Cause: fmt.Sprintf("--secret %s: the server is given no %s", n, n), Fix: "pass it with --env " + n + " (the host's value) or --env " + n + "=VALUE"}
		}
		v := env[i][len(n)+1:]
		if len(v) < minSecret {
			return nil, &sandbox.InfraError{Cause: fmt.Sprintf("--secret %s: a value of %d bytes is too short to watch (it would be found everywhere)", n, len(v)), Fix: fmt.Sprintf("watch values of %d bytes or more", minSecret)}
		}
		w.add(n, v)
	}
	return w, nil
}

// minSecret is the shortest value --secret watches.
const minSecret = 8

// samePathMarker scopes the changes under the workspace, mounted at its
// host path, as the workspace's.
type samePathMarker struct {
	*sandbox.Session
	target string
}

func (m samePathMarker) Mark(ctx context.Context, call bool, seq int) report.Effects {
	eff := m.Session.Mark(ctx, call, seq)
	for i, f := range eff.Files {
		if f.Path == m.target || strings.HasPrefix(f.Path, m.target+"/") {
			eff.Files[i].Scope, eff.Files[i].Area = "workspace", ""
		}
	}
	return eff
}

// ambiguityLogger is the session's Ambiguity hook in a run: each place
// where two JSON readers part on a server's message is logged (an
// ambiguous record, the first maxAmbiguitiesLogged; then counted) and
// noted for the relay, which strips the hints of a tool so defined; then
// next, if set, is told.
func ambiguityLogger(next func(report.Ambiguity), notes *ambNotes, log *runLog) func(report.Ambiguity) {
	var mu sync.Mutex
	n := 0
	return func(a report.Ambiguity) {
		notes.note(a)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		switch {
		case i <= maxAmbiguitiesLogged:
			where := a.Path
			if a.Key != "" {
				where = strings.TrimPrefix(where+"."+strconv.Quote(a.Key), ".")
			}
			if where == "" {
				where = "the message"
			}
			human := fmt.Sprintf("ambiguous: %s at %s", a.Kind, where)
			if a.Tool != "" {
				human += " (tool " + quoteTool(a.Tool) + ")"
			}
			if a.Refused {
				human += ", not passed on"
			}
			human += ": " + a.Detail
			if i == maxAmbiguitiesLogged {
				human += " (further ambiguities are counted in the report, not logged)"
			}
			log.record(RunRecord{Type: "ambiguous", Kind: a.Kind, Method: a.Method, Tool: a.Tool, Path: a.Path, Key: a.Key, Detail: a.Detail, Refused: a.Refused}, report.OneLine(human))
		}
		if next != nil {
			next(a)
		}
	}
}

// maxAmbiguitiesLogged bounds the ambiguous records of a run (as the
// report bounds the ambiguities it lists).
const maxAmbiguitiesLogged = report.MaxAmbiguities
