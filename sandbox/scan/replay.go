package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// replay checks, for each call the rules suspect, which of its effects it
// caused: the call is replayed in a fresh session (same image, bait and
// workspace) after the calls of its session before it, and beside it the
// same session without the call (the control) watches as long; an effect
// seen during the call is reproduced when the replay has it and the
// control does not. The outcome is the call's Replay.
//
// The suspects' replays run side by side, ReplayJobs at a time (each
// replay's two legs together), and their outcomes are recorded in the
// suspects' order, so that the report is the same however they
// interleave.
//
// A replay whose sandbox was lost (its container removed, killed, paused
// from outside) tells nothing of the call: the call keeps no Replay, so
// that its effects stay with it as seen (as with --no-replay), never
// handed to its candidates' claims; a replay problem says why, the
// report is incomplete, and the error wraps ErrIncomplete and
// ErrSandboxLost. The other suspects are still replayed.
func (sc *scanner) replay(rep *report.Report) error {
	if sc.opts.Suspects == nil {
		rep.Sandbox.Replay = "off"
		return nil
	}
	rep.Sandbox.Replay = "findings"
	seqs := sc.opts.Suspects(rep)
	// jobs are the replays to run; bound, the problem of the replay
	// bound, said after the outcomes of the replays before it.
	var jobs []*replayJob
	var bound *report.Problem
	for n, seq := range seqs {
		i := slices.IndexFunc(rep.Calls, func(c report.Call) bool { return c.Seq == seq })
		if i < 0 {
			continue
		}
		c := &rep.Calls[i]
		cands := report.Candidates(rep, i)
		c.Replay = &report.Replay{Status: "skipped", Reproduced: []string{}, Candidates: cands}
		if n >= sc.opts.MaxReplays {
			if n == sc.opts.MaxReplays {
				bound = &report.Problem{Kind: "replay", Call: seq, Message: fmt.Sprintf(
					"%d call(s) to replay, past the bound of %d: from call %d on, effects are pinned on no call", len(seqs), sc.opts.MaxReplays, seq)}
			}
			continue
		}
		j := sc.newJob(rep, i, cands)
		// One begun during the linger (see replayEarly) is this one when
		// it replays the same calls.
		if e := sc.early[seq]; e != nil && e.timed == j.timed && slices.Equal(e.prefixSeqs, j.prefixSeqs) {
			e.call = i
			j = e
			delete(sc.early, seq)
		} else {
			sc.startJob(j)
		}
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		<-j.done
	}
	var lost []error
	for _, j := range jobs {
		if err := sc.settle(rep, j); err != nil {
			lost = append(lost, err)
		}
	}
	if bound != nil {
		rep.Problems = append(rep.Problems, *bound)
	}
	if len(lost) == 0 {
		return nil
	}
	// What was seen is kept, but a scan whose replays were lost is no
	// result.
	rep.Complete = false
	return fmt.Errorf("%w: %w", ErrIncomplete, errors.Join(lost...))
}

// settle writes replay j's outcome into rep: the reproduced effects, or,
// when it could not tell (not run, a leg's error, a lost sandbox), no
// Replay at all, so that the call's effects stay with it as seen and are
// never handed to its candidates' claims (a replay that failed for the
// runner's or the engine's reason says nothing of the call); a problem
// says why. A lost sandbox is returned, for the report's incompleteness.
func (sc *scanner) settle(rep *report.Report, j *replayJob) error {
	c := &rep.Calls[j.call]
	if j.wcap || j.ccap {
		// A bound hit in a replay is said as the scan's own linger says
		// it, and fails the gate the same way: what the task did after the
		// cap was compared in neither leg.
		rep.Problems = append(rep.Problems, report.Problem{Kind: report.ProblemLingerBound, Call: j.seq, Message: fmt.Sprintf(
			"replaying call %d: a task of the replay still ran at --linger-max %s; what it did later is not compared", j.seq, sc.opts.LingerMax)})
	}
	switch {
	case j.notRun:
		c.Replay = nil
		rep.Problems = append(rep.Problems, report.Problem{Kind: "replay", Call: j.seq, Message: "not replayed: " + sc.why().Message + "; the call's effects stay with it, unreplayed"})
	case errors.Is(j.werr, sandbox.ErrSandboxLost) || errors.Is(j.cerr, sandbox.ErrSandboxLost):
		c.Replay = nil
		var lost error
		for _, err := range []error{j.werr, j.cerr} {
			if errors.Is(err, sandbox.ErrSandboxLost) {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "replay", Call: j.seq, Message: fmt.Sprintf(
					"replaying call %d: %s; the call's effects stay with it, unreplayed", j.seq, report.OneLine(lostCause(err).Error()))})
				lost = errors.Join(lost, fmt.Errorf("replaying call %d: %w", j.seq, lostCause(err)))
			}
		}
		return lost
	case j.werr != nil || j.cerr != nil:
		c.Replay = nil
		for _, err := range []error{j.werr, j.cerr} {
			if err != nil {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "replay", Call: j.seq, Message: "replaying the call: " + report.OneLine(err.Error()) + "; the call's effects stay with it, unreplayed"})
			}
		}
	default:
		c.Replay.Status = "replayed"
		c.Replay.Reproduced = reproduced(originalKeys(rep, c), j.with, j.without)
	}
	return nil
}

// newJob is the replay of rep.Calls[i], whose candidates are cands.
func (sc *scanner) newJob(rep *report.Report, i int, cands []int) *replayJob {
	c := rep.Calls[i]
	// With --isolation call, the session replayed the setup calls first.
	j := &replayJob{call: i, seq: c.Seq, tool: c.Tool, prefix: slices.Clone(sc.setupsOf[cands[0]]), done: make(chan struct{})}
	for _, k := range cands[:len(cands)-1] {
		p := rep.Calls[slices.IndexFunc(rep.Calls, func(x report.Call) bool { return x.Seq == k })]
		j.prefix = append(j.prefix, probes.Call{Tool: p.Tool, Arguments: sc.sent(p), Source: p.Source, Negative: p.Negative, Offer: p.ValuesFrom != nil})
	}
	// The prefix is the main session's calls (no setups of another
	// session first): its legs can be measured against them.
	j.timed = len(j.prefix) == len(cands)-1
	j.prefixSeqs = slices.Clone(cands[:len(cands)-1])
	j.target = probes.Call{Tool: c.Tool, Arguments: sc.sent(c), Source: c.Source, Negative: c.Negative, Offer: c.ValuesFrom != nil}
	return j
}

// startJob runs j when one of the ReplayJobs places is free, and closes
// j.done when it has run.
func (sc *scanner) startJob(j *replayJob) {
	sc.jobs.Add(1)
	go func() {
		defer sc.jobs.Done()
		defer close(j.done)
		sc.replaySem <- struct{}{}
		defer func() { <-sc.replaySem }()
		sc.replayBoth(j)
	}()
}

// replayEarly begins, as the session's linger begins, the replays of
// the calls before its last that its report so far makes suspects: what
// the linger sees is the last call's (its "between" phase), so their
// replays are the same as after it, and they run while the linger
// waits. The report is copied, as the session's end will have it
// (sanitized, the bait as placeholders, normalized), for the rules
// alone: replay chooses again on the final report, takes the replays
// begun here that it chose too, and lets the others end unused.
func (sc *scanner) replayEarly(rep *report.Report, last int) {
	b, err := json.Marshal(rep)
	var cp report.Report
	if err == nil {
		err = json.Unmarshal(b, &cp)
	}
	if err != nil {
		sc.logf("replays not begun during the linger: copying the report: %v", err)
		return
	}
	cp.Sanitize()
	if !sc.opts.NoSeed {
		cp.Redact(sc.bait.Placeholders())
	}
	cp.Normalize()
	var begun []int
	defer func() {
		if len(begun) > 0 {
			sc.logf("replays begun as the linger begins: calls %v", begun)
		}
	}()
	for n, seq := range sc.opts.Suspects(&cp) {
		if n >= sc.opts.MaxReplays || seq >= last {
			break
		}
		i := slices.IndexFunc(cp.Calls, func(c report.Call) bool { return c.Seq == seq })
		if i < 0 {
			continue
		}
		j := sc.newJob(&cp, i, report.Candidates(&cp, i))
		if sc.early == nil {
			sc.early = map[int]*replayJob{}
		}
		sc.early[seq] = j
		sc.startJob(j)
		begun = append(begun, seq)
	}
}

// replayJob is one suspect call's replay: what it runs, and what its
// legs saw.
type replayJob struct {
	call int // the call's index in the report
	seq  int
	tool string
	// done is closed when both legs have run.
	done   chan struct{}
	prefix []probes.Call
	target probes.Call
	// prefixSeqs are the prefix's calls in the scan, when timed: the
	// prefix is exactly those (see horizon).
	prefixSeqs []int
	timed      bool
	// notRun: the run's bound ended before the replay began.
	notRun        bool
	with, without map[string]bool
	werr, cerr    error
	// wcap, ccap: a task still held the leg at --linger-max.
	wcap, ccap bool
}

// replayBoth runs j's two legs side by side: the replay (prefix, then
// the call) and the control (prefix, then as long as the call took in
// the replay, and controlMargin more).
func (sc *scanner) replayBoth(j *replayJob) {
	if sc.ctx.Err() != nil {
		j.notRun = true
		return
	}
	sc.logf("replaying call %d (%s) after %d call(s) of its session", j.seq, j.tool, len(j.prefix))
	name := fmt.Sprintf("replay %d", j.seq)
	defer sc.opts.Timings.Track(name).Begin(timings.StepReplay, j.seq)()
	l := newLegs()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); j.with, j.wcap, j.werr = sc.replayOnce(name+" with", j, true, l) }()
	go func() { defer wg.Done(); j.without, j.ccap, j.cerr = sc.replayOnce(name+" control", j, false, l) }()
	wg.Wait()
}

// legs is what a replay's two legs share: how long the replay's call
// and its settle took, once done is closed; how long the replay watched
// from its window's start, once watchDone is.
type legs struct {
	done      chan struct{}
	took      time.Duration
	doneOnce  sync.Once
	watchDone chan struct{}
	watched   time.Duration
	watchOnce sync.Once
}

func newLegs() *legs { return &legs{done: make(chan struct{}), watchDone: make(chan struct{})} }

// callDone says the replay's call and settle took d (the first word
// counts: a leg that ends early says 0).
func (l *legs) callDone(d time.Duration) {
	l.doneOnce.Do(func() { l.took = d; close(l.done) })
}

// watchEnded says the replay watched d from its window's start (the
// first word counts, as for callDone).
func (l *legs) watchEnded(d time.Duration) {
	l.watchOnce.Do(func() { l.watched = d; close(l.watchDone) })
}

// controlMargin is how much longer than the replayed call the control
// watches: a timer of the prefix that lands as the replay's window ends
// lands in the control's too, however the two containers were
// scheduled, so that it is never taken for the call's. (It was the whole
// --settle bound, 2 s, when the control waited the original call's
// time.)
const controlMargin = 500 * time.Millisecond

// lostCause is the part of a replay's error that says its sandbox was
// lost (a session's Close joins it to what else went wrong).
func lostCause(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if errors.Is(e, sandbox.ErrSandboxLost) {
				return lostCause(e)
			}
		}
	}
	return err
}

// reproduced are the keys of orig (the call's effects) that happened with
// the call and not in the control, sorted. Keys are compared with their
// run-specific parts replaced (replayKey): a browser's profile directory
// made under a new random name each time
// (/tmp/puppeteer_dev_chrome_profile-jgKl5H) is the same effect again, and
// so is a commit object (.git/objects/0e/e08e7e...) whose hash holds the
// time it was made.
func reproduced(orig []string, with, without map[string]bool) []string {
	norm := func(m map[string]bool) map[string]bool {
		out := make(map[string]bool, len(m))
		for k := range m {
			out[replayKey(k)] = true
		}
		return out
	}
	w, wo := norm(with), norm(without)
	out := []string{}
	for _, k := range orig {
		if n := replayKey(k); w[n] && !wo[n] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// fanOut stands for a fan-out directory of a content-addressed store.
const fanOut = "<fan-out>"

// replayKey is effect key k with its run-specific parts replaced
// (report.NormalizeEvidence), a fan-out directory too: a path component of
// two lower-case hex digits, the first byte of a hash that names what is
// under it (git's .git/objects/0e, npm's _cacache/content-v2/sha512/ab/cd).
// NormalizeEvidence already makes the hash a placeholder, but keeps the
// letters of such a directory ("0e" is "<n>e", "46" is "<n>"), so the same
// object made again under a new hash would not be the same effect. Only
// the replay compares so: fingerprints are left as they are.
func replayKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		if i > 0 && isFanOut(p) {
			parts[i] = fanOut
		}
	}
	return report.NormalizeEvidence(strings.Join(parts, "/"))
}

// isFanOut reports whether path component p is two lower-case hex digits.
func isFanOut(p string) bool {
	if len(p) != 2 {
		return false
	}
	for k := 0; k < len(p); k++ {
		if c := p[k]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// sent is what call c sent: its arguments before the report's redaction.
func (sc *scanner) sent(c report.Call) json.RawMessage {
	if a, ok := sc.args[c.Seq]; ok {
		return a
	}
	return c.Arguments
}

// originalKeys are the keys of what was seen during c and in the
// "between" phase after it.
func originalKeys(rep *report.Report, c *report.Call) []string {
	effs := []report.Effects{c.Effects}
	for _, p := range rep.Phases {
		if p.Name == "between" && p.After == c.Seq {
			effs = append(effs, p.Effects)
		}
	}
	return effectKeys(effs...)
}

func effectKeys(effs ...report.Effects) []string {
	var out []string
	for _, e := range effs {
		for _, f := range e.Files {
			out = append(out, f.Key())
		}
		for _, p := range e.Processes {
			out = append(out, p.Key())
		}
		for _, n := range e.Network {
			out = append(out, n.Key())
		}
	}
	return out
}

// replayOnce runs j's prefix in a fresh session, then its target (the
// control, !with: nothing, as long as the other leg's target took and
// controlMargin more), then watches to the leg's horizon (see horizon),
// and returns the keys of what happened after the prefix, and whether
// a task still held the leg at --linger-max.
func (sc *scanner) replayOnce(name string, j *replayJob, with bool, l *legs) (keys map[string]bool, capped bool, err error) {
	prefix, target := j.prefix, &j.target
	if !with {
		target = nil
	}
	s, err := sc.open(name)
	defer func() {
		// Close runs teardown to its end, hashing nothing past the run's
		// deadline.
		err = errors.Join(err, s.Close(sc.ctx))
	}()
	if target != nil {
		// whatever ends this leg early, the control is not kept waiting
		// (these run before the teardown above)
		defer l.callDone(0)
		defer l.watchEnded(0)
	}
	if err != nil {
		return nil, false, err
	}
	leg := legTimes{opened: time.Now()}
	if _, err := s.ListTools(sc.ctx); err != nil {
		return nil, false, fmt.Errorf("listing tools: %w", err)
	}
	// The ids a call took from earlier results are taken again from this
	// session's results: a server may hand out new ones each time.
	var st probes.State
	args := func(p probes.Call) json.RawMessage {
		if p.Offer {
			a, _ := st.Offer(sc.schemas[p.Tool], p.Arguments)
			return a
		}
		return p.Arguments
	}
	for i, p := range prefix {
		at := callTimes{sent: time.Now()}
		c := s.Call(sc.ctx, sandbox.CallRequest{Seq: i + 1, Tool: p.Tool, Arguments: args(p), Source: p.Source, Negative: p.Negative})
		at.answered = time.Now()
		leg.calls = append(leg.calls, at)
		if report.Succeeded(c) {
			st.Harvest(i+1, p.Tool, c.Result, s.Structured())
		}
		if err := s.LostErr(sc.ctx, i+1); err != nil {
			return nil, false, err // Close says it again: the error is the loss
		}
		if c.ErrorKind == "transport" || c.ErrorKind == "interrupted" {
			return nil, false, fmt.Errorf("call %d of the replay's prefix (%s): %s", i+1, p.Tool, c.Error)
		}
		s.Mark(sc.ctx, true, i+1)
		if len(s.Background()) > 0 {
			s.Settle(sc.ctx, sc.opts.Settle)
		}
	}
	s.Mark(sc.ctx, false, len(prefix)) // the start of the window
	var base *quietBase
	if sc.opts.Linger > 0 {
		base = sc.readBase(s)
	}
	start := time.Now()
	var effs []report.Effects
	var answered time.Time // the replayed call's answer, in the replay
	if target != nil {
		c := s.Call(sc.ctx, sandbox.CallRequest{Seq: len(prefix) + 1, Tool: target.Tool, Arguments: args(*target), Source: target.Source, Negative: target.Negative})
		answered = time.Now()
		if c.ErrorKind == "interrupted" {
			return nil, false, fmt.Errorf("the replayed call: %s", c.Error)
		}
		effs = append(effs, s.Mark(sc.ctx, true, len(prefix)+1))
		if err := s.LostErr(sc.ctx, len(prefix)+1); err != nil {
			return nil, false, err
		}
		if len(s.Background()) > 0 {
			s.Settle(sc.ctx, sc.opts.Settle)
		}
		l.callDone(time.Since(start))
	} else {
		end := s.Timings().Begin(timings.StepWindow, len(prefix)+1)
		if waitLost(sc.ctx, s, l.done) {
			sleepLost(sc.ctx, s, time.Until(start.Add(l.took+controlMargin)))
		}
		end()
	}
	if sc.opts.Linger > 0 {
		end := s.Timings().Begin(timings.StepLinger, len(prefix)+1)
		h, timed := sc.times.horizon(j.seq, j.prefixSeqs, leg, start, answered)
		var why string
		if timed && j.timed {
			why, capped = sc.watchLeg(s, base, start, h, sc.opts.LingerMax)
		} else {
			// Ended at once when quiet: either leg then saw all it will.
			lw := sc.watch(s, base, sc.opts.Linger, sc.legLinger())
			why, h = "its linger", 0
			capped = slices.ContainsFunc(lw.held, func(w agent.Wakeup) bool { return !eventLoop(w) })
		}
		if target == nil {
			// The control watches as long as the replay did (its last
			// snapshot included) and controlMargin more, whatever held
			// the replay (a task the call left running): what the calls
			// before it did in that time is then seen in both.
			if waitLost(sc.ctx, s, l.watchDone) && time.Since(start) < l.watched+controlMargin {
				sleepLost(sc.ctx, s, time.Until(start.Add(l.watched+controlMargin)))
				why = "as long as the replay"
			}
		}
		sc.logf("%s: watched %s (horizon %s), %s", name, time.Since(start).Round(time.Millisecond), h.Round(time.Millisecond), why)
		end()
	}
	effs = append(effs, s.Mark(sc.ctx, false, len(prefix)+1))
	if target != nil {
		// after its last snapshot, which reads what was written while it
		// walked: the control watches that long too
		l.watchEnded(time.Since(start))
	}
	if err := s.LostErr(sc.ctx, 0); err != nil {
		// What the window saw was cut short: it is no replay.
		return nil, false, err
	}
	// Compared with the report's keys, which are sanitized and show the
	// bait as placeholders.
	ps := sc.bait.Placeholders()
	for i := range effs {
		effs[i].Sanitize()
	}
	keys = map[string]bool{}
	for _, k := range effectKeys(effs...) {
		keys[report.RedactString(k, ps)] = true
	}
	return keys, capped, sc.ctx.Err()
}

// waitLost waits until done is closed (true), or ctx ends or s's
// container is seen lost.
func waitLost(ctx context.Context, s *sandbox.Session, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-s.LostSignal():
	}
	return false
}

// sleepLost waits d, or until ctx ends or s's container is seen lost (a
// replay's window, which a lost sandbox cuts short).
func sleepLost(ctx context.Context, s *sandbox.Session, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-s.LostSignal():
	}
}
