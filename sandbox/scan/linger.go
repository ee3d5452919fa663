package scan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// DefaultLinger is how long a scan keeps observing after its last call
// when nothing tells it sooner that the sandbox is quiet.
const DefaultLinger = 3 * time.Second

// DefaultLingerMax bounds a linger that something the calls set off
// keeps open (see linger).
const DefaultLingerMax = 30 * time.Second

// The wait between two quiet readings of a linger: the first come soon
// (most servers are quiet at once), the next further apart, so that a
// linger held to its cap costs the agent a few dozen readings.
const (
	lingerPollMin = 10 * time.Millisecond
	lingerPollMax = time.Second
)

// thread is a task of the sandbox (pid, tid as its pid namespace numbers
// them; tid 0 for a process's timer), and for a timer object (a timerfd,
// a POSIX timer, an itimer) which one.
type thread struct {
	pid, tid int
	timer    string
}

// timerObject tells a timer a task holds from the task's own wait.
func timerObject(w agent.Wakeup) bool {
	return slices.Contains([]agent.Reason{agent.ReasonTimerfd, agent.ReasonPosixTimer, agent.ReasonITimer}, w.Reason)
}

func keyOf(w agent.Wakeup) thread {
	if timerObject(w) {
		return thread{w.PID, w.TID, string(w.Reason) + " " + w.Detail}
	}
	return thread{w.PID, w.TID, ""}
}

// quietBase is what could still act before a session's first call: the
// threads a reading found pending, with the wait each was in, and when.
// Nil when the agent cannot be asked.
type quietBase struct {
	at    time.Time
	waits map[thread]agent.Wakeup
	// err: the agent was asked and did not answer.
	err error
	// st follows the threads' waits from the base on: through the
	// readings asked for after each call (see follow), then the linger's.
	st *lingerState
}

// readBase reads the sandbox before the first call of a session (or of a
// replay's window).
func (sc *scanner) readBase(s *sandbox.Session) *quietBase {
	r, err := s.Quiet(sc.ctx)
	switch {
	case errors.Is(err, sandbox.ErrNoQuiet):
		return nil
	case err != nil:
		// the agent did not answer (a server can make readings slow):
		// the linger keeps its window and says so
		return &quietBase{err: err}
	}
	b := &quietBase{at: time.Now(), waits: map[thread]agent.Wakeup{}}
	for _, w := range r.Wakeups {
		b.waits[keyOf(w)] = w
	}
	b.st = &lingerState{base: b, waits: map[thread]loopWait{}, fired: map[thread]bool{}, prev: b.at}
	s.QuietReadings() // this one's, and any before it
	return b
}

// follow takes in the readings that arrived since the last (their holds
// do not matter yet: what they tell is which waits ended at their due
// time while the calls ran, timers a runtime then re-arms), and asks for
// the next, without waiting: called after each call.
func (b *quietBase) follow(s *sandbox.Session) {
	if b == nil || b.st == nil {
		return
	}
	b.st.take(s.QuietReadings())
	s.AskQuiet()
}

// take feeds readings, oldest first, into l as at the times they were
// made.
func (l *lingerState) take(rs []agent.QuietReading) {
	now, anow := time.Now(), agent.Now()
	never := now.Add(24 * time.Hour)
	for _, r := range rs {
		at := now.Add(time.Duration(r.Start - anow))
		if r.Err != "" || !at.After(l.prev) {
			continue
		}
		for _, w := range r.Wakeups {
			l.holds(w, at, never)
		}
		l.prev = at
	}
}

// fireSlack is how close to its due time a wait's end must be read to
// count as its timer firing: readings are up to lingerPollMax apart, and
// a wait's time is read from its start's arguments.
const fireSlack = lingerPollMax + 100*time.Millisecond

// loopWait is a thread's wait as the readings since the base first read
// it.
type loopWait struct {
	mark, syscall string
	// after and at bound when the wait began: after the reading before
	// the first that saw it, by that one.
	after, at time.Time
	within    time.Duration
	// rearmed: it began as the thread's last wait ended at its due time,
	// a timer the thread re-armed as it fired.
	rearmed bool
}

// lingerState follows a session's threads from its base reading on.
type lingerState struct {
	base *quietBase
	// waits is each thread's bounded wait entered since the base, as
	// first read; fired, the threads whose sleep (of no known time) ended.
	waits map[thread]loopWait
	fired map[thread]bool
	// prev is when the reading before this one was made (the base's,
	// before the first).
	prev time.Time
}

// holds reports whether w, read at now, keeps a linger open past its
// least window (to at most cap):
//   - a thread, process or timer that was not pending before the first
//     call, with no time the agent can read (running, a timed futex, a
//     setitimer): the calls set it off;
//   - the same bounded wait as before the calls (the thread has not run
//     since) when it is due by the cap: a timer armed at startup, seen
//     as it fires;
//   - a timer object (a timerfd, an alarm) armed since, while armed
//     (heldPastCap when due after the cap);
//   - a bounded wait (epoll_wait's, poll's timeout) of a new thread, or
//     one a pre-call thread entered since, unless it began as the
//     thread's last wait ended at its due time: an event loop waits for
//     the earliest of its timers, a call's among them, and waits for it;
//     one it re-armed as a timer fired does not hold (a runtime re-arms
//     its own: V8 its memory reducer every 8 s, for longer than any cap,
//     on most node servers measured), and its later timers are hidden
//     behind its earliest. One due after the cap is heldPastCap, which
//     linger logs and does not report (see eventLoop).
//
// A thread running before the calls holds it too, and one that entered a
// sleep (nanosleep) since, until it next wakes. One pending before the
// calls in a wait with no time the agent can read (the Go runtime's
// monitor, in a timed futex, is never quiet and wakes on every call) is
// watched for the least window, as before the readings
// existed: what it does later is the server's idle behaviour, and a call
// that woke it into a wait of its own is not told from it.
func (l *lingerState) holds(w agent.Wakeup, now, cap time.Time) hold {
	th := keyOf(w)
	was, ok := l.base.waits[th]
	if timerObject(w) {
		// its time is read anew each time: pending while armed, a new
		// one held, one armed before the calls only while due by the cap
		switch {
		case !w.Bounded && ok:
			return notHeld
		case !w.Bounded:
			return held
		case !now.Add(w.Within).After(cap):
			return held
		case ok:
			return notHeld
		}
		return heldPastCap
	}
	switch {
	case !ok && !w.Bounded:
		return held
	case !ok:
		// a new thread's bounded wait: as an event loop's, below
	case !w.Bounded && acting(w):
		return held
	case !w.Bounded && sleeping(w) && w.Mark != "" && (w.Mark != was.Mark || w.Syscall != was.Syscall):
		// a sleep entered since the first call, its time in the server's
		// memory: held until the thread next wakes (a periodic sleeper
		// after one period)
		if l.fired[th] {
			return notHeld
		}
		if cur, seen := l.waits[th]; seen && (cur.mark != w.Mark || cur.syscall != w.Syscall) {
			l.fired[th] = true
			return notHeld
		} else if !seen {
			l.waits[th] = loopWait{mark: w.Mark, syscall: w.Syscall, after: l.prev, at: now}
		}
		return held
	case !w.Bounded:
		return notHeld
	case w.Mark != "" && w.Mark == was.Mark && w.Syscall == was.Syscall && was.Bounded:
		// kept as the thread's wait, begun at no known time: when it ends,
		// the thread's timer fired and what it waits for next it re-armed
		l.waits[th] = loopWait{mark: w.Mark, syscall: w.Syscall, at: l.base.at, within: was.Within}
		if l.base.at.Add(was.Within).After(cap) {
			return notHeld
		}
		return held
	}
	cur, seen := l.waits[th]
	if !seen || cur.mark != w.Mark || cur.syscall != w.Syscall {
		// the last wait ended: at its due time, if it can have (it began as
		// early as after), and then this one is the timer re-armed;
		// readings are not exact, and a wait read as re-armed when its
		// thread was woken sooner only stops holding sooner, as after a
		// timer that fires first. Woken sooner (a call arms a timer), the
		// new wait holds again.
		rearmed := seen && !now.Before(cur.after.Add(cur.within-fireSlack))
		cur = loopWait{mark: w.Mark, syscall: w.Syscall, after: l.prev, at: now, within: w.Within, rearmed: rearmed}
		l.waits[th] = cur
	}
	if cur.rearmed {
		return notHeld
	}
	// due past the cap only if it is even had the wait begun as early as
	// it can have: else it is waited for, and seen if it fires by then
	if cur.after.Add(cur.within).After(cap) {
		return heldPastCap
	}
	return held
}

// acting tells a task that is running, or ran between the reading's two
// passes: an idle server's threads wait, and one that spins (a busy loop
// counting down to a write) holds the linger whenever it began.
func acting(w agent.Wakeup) bool {
	return slices.Contains([]agent.Reason{agent.ReasonRunning, agent.ReasonChanged, agent.ReasonTransient}, w.Reason)
}

// sleeping tells a thread in an explicit sleep (nanosleep, clock_nanosleep:
// C's sleep, Python's time.sleep), whose time the agent cannot read, from
// one parked by its runtime in a timed futex (Go's monitor).
func sleeping(w agent.Wakeup) bool {
	return w.Syscall == "nanosleep" || w.Syscall == "clock_nanosleep"
}

// eventLoop tells a thread's own bounded wait (epoll_wait, poll, select:
// an event loop waiting for its earliest timer) from the rest. Such a
// timer still pending past the cap is logged, not reported: honest
// runtimes and libraries arm them for longer than any cap (Go's HTTP
// client keeps an idle connection 90 s; a linger-bound on it failed the
// fixture's TestBoundaryProbes once under load), whether one is the
// loop's earliest when the linger ends depends on how the others fell, so
// the report would not be the same for the same input; and a server that
// wants to hide one puts a shorter timer before it, which no reading sees
// past (docs/gate.md says the limit).
func eventLoop(w agent.Wakeup) bool { return w.Bounded && !timerObject(w) }

// hold is what a wakeup does to a linger.
type hold int

const (
	notHeld hold = iota
	held
	// heldPastCap: set off by the calls, due only past the cap: waiting
	// cannot see it, and it is said.
	heldPastCap
)

// lingered is how a linger ended.
type lingered struct {
	took time.Duration
	// end says why it ended, for the log.
	end string
	// held is what the calls set off that was still pending at the cap,
	// or due only past it (nil: nothing was).
	held []agent.Wakeup
}

// watch keeps observing s after its calls: at least least, then while
// something the calls set off can still act (see lingerState.holds), up
// to most; at once when a reading finds nothing in the sandbox that can
// act. Without readings (no agent, or one that cannot be asked) it waits
// least, as a fixed window. A lost sandbox or the run's end stops it.
func (sc *scanner) watch(s *sandbox.Session, base *quietBase, least, most time.Duration) lingered {
	start := time.Now()
	most = max(most, least)
	cap := start.Add(most)
	var st *lingerState
	var unread error
	if base != nil {
		st, unread = base.st, base.err
	}
	if st != nil {
		st.take(s.QuietReadings()) // the last calls'
	}
	poll := lingerPollMin
	for {
		if st == nil || unread != nil {
			// no readings: the fixed window, and when the agent was asked
			// and did not answer, what it could not tell is said
			sleepLost(sc.ctx, s, least-time.Since(start))
			l := lingered{took: time.Since(start), end: "its window (no quiet readings)"}
			if unread != nil && sc.ctx.Err() == nil {
				l.held = []agent.Wakeup{{Reason: "unread", Detail: report.OneLine(unread.Error())}}
			}
			return l
		}
		r, err := s.Quiet(sc.ctx)
		if err != nil {
			unread = err
			continue
		}
		now := time.Now()
		elapsed := now.Sub(start)
		if r.Quiet() {
			return lingered{took: elapsed, end: "nothing in the sandbox can act"}
		}
		var pending []agent.Wakeup
		waiting := false // something held is due within the cap
		for _, w := range r.Wakeups {
			switch st.holds(w, now, cap) {
			case held:
				pending, waiting = append(pending, w), true
			case heldPastCap:
				pending = append(pending, w)
			}
		}
		st.prev = now
		if r.Err != "" || r.More > 0 {
			pending, waiting = append(pending, agent.Wakeup{Reason: "unread", Detail: cmp.Or(r.Err, fmt.Sprintf("%d wakeups past the reading's bound", r.More))}), true
		}
		left := most - elapsed
		switch {
		case len(pending) == 0 && elapsed >= least:
			return lingered{took: elapsed, end: "nothing the calls set off is pending"}
		case !waiting && elapsed >= least:
			return lingered{took: elapsed, end: "what is pending is due past the cap", held: pending}
		case left <= 0:
			return lingered{took: elapsed, end: "at the cap", held: pending}
		}
		wait := min(poll, left)
		if !waiting {
			wait = min(wait, least-elapsed)
		}
		poll = min(2*poll, lingerPollMax)
		if sleepLost(sc.ctx, s, wait); sc.ctx.Err() != nil || s.LostErr(sc.ctx, 0) != nil {
			return lingered{took: time.Since(start), end: "the sandbox or the run ended"}
		}
	}
}

// linger keeps observing after the last call (seq): timers, threads and
// children it set off act now or, still pending at --linger-max, are a
// linger-bound problem. What the calls left running at the end is a
// background problem.
func (sc *scanner) linger(s *sandbox.Session, base *quietBase, seq int) {
	if sc.opts.Linger <= 0 {
		return
	}
	sc.logf("lingering after call %d (at least %s with no quiet reading, at most %s)", seq, sc.opts.Linger, sc.opts.LingerMax)
	end := s.Timings().Begin(timings.StepLinger, seq)
	resume := func() {}
	if sc.opts.Idle != nil {
		resume = sc.opts.Idle()
	}
	l := sc.watch(s, base, sc.opts.Linger, sc.opts.LingerMax)
	resume()
	end()
	sc.logf("linger after call %d: %s, %s", seq, l.took.Round(time.Millisecond), l.end)
	for _, w := range l.held {
		sc.logf("  still pending: pid %d tid %d %s %s %s within %s (bounded %t)", w.PID, w.TID, w.Comm, w.Reason, w.Syscall, w.Within, w.Bounded)
	}
	sc.noteLinger(l.took)
	if sc.ctx.Err() != nil {
		return
	}
	var bound, loops []agent.Wakeup
	for _, w := range l.held {
		if eventLoop(w) {
			loops = append(loops, w)
		} else {
			bound = append(bound, w)
		}
	}
	if len(bound) > 0 {
		s.Problem(report.ProblemLingerBound, seq, "what the calls set off could still act after --linger-max %s (%s): what it does then is not seen", sc.opts.LingerMax, describeWakeups(bound))
	}
	if len(loops) > 0 {
		// not in the report: see eventLoop
		sc.logf("  not said: %s, an event loop's timer due after --linger-max %s", describeWakeups(loops), sc.opts.LingerMax)
	}
	if bg := s.Background(); len(bg) > 0 {
		s.Problem("background", seq, "%d process(es) left by the calls still ran after the linger; what they do later is not seen", len(bg))
	}
}

// noteLinger keeps the longest linger of the scan's sessions: a replay's
// leg that cannot be measured against the scan (see horizon: an
// --isolation call replay) watches as long (and no longer: what the
// session saw later was not seen at all).
func (sc *scanner) noteLinger(d time.Duration) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.lingerTook = max(sc.lingerTook, d)
}

// legLinger is the most such a leg lingers: as long as the longest
// session linger and controlMargin more (the skew between containers),
// within --linger-max, and at least --linger.
func (sc *scanner) legLinger() time.Duration {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return max(sc.opts.Linger, min(sc.lingerTook+controlMargin, sc.opts.LingerMax))
}

// describeWakeups names what could still act, for a problem's message:
// the same set in the same words whatever the pids and the timing (the
// report is deterministic), e.g. "node: timed-wait in epoll_pwait (1),
// sleep: timed-wait in clock_nanosleep (1)".
func describeWakeups(ws []agent.Wakeup) string {
	n := map[string]int{}
	for _, w := range ws {
		k := string(w.Reason)
		if w.Syscall != "" {
			k += " in " + w.Syscall
		}
		if w.Comm != "" {
			k = w.Comm + ": " + k
		}
		n[k]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s (%d)", k, n[k])
	}
	return strings.Join(keys, ", ")
}
