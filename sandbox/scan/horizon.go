package scan

import (
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// A replay's legs watch as long as the replayed call's window in the
// scan (from its request to the close of the "between" phase after it:
// where what it is compared on was seen), plus how much sooner the leg
// reached that point after each earlier event than the scan did, plus
// controlMargin: its horizon. What the prefix set off lands, in the
// control, when it landed in the scan, measured from the event that set
// it off (the session's start, a call's request or answer), so no later
// than the horizon; what lands later was not in the call's window and
// changes nothing the replay decides. Past the horizon a leg still
// watches while a task of its sandbox runs (a busy loop counting down,
// slower under the replays' load), up to --linger-max; and the control
// watches at least as long as the replay did, and controlMargin more.
// Before, each leg lingered as the scan did, waiting for what its event
// loops had pending: V8's memory reducer, 7 to 8 s on every node server.

// callTimes are when a call of the scan's main session was sent and
// answered, and when its window closed.
type callTimes struct {
	sent, answered, end time.Time
}

// sessionTimes are the main session's calls' times, by seq, and when the
// session was open (its handshake answered): a replay's prefix is those
// calls, and its legs are measured against them.
type sessionTimes struct {
	s      *sandbox.Session
	opened time.Time
	calls  map[int]*callTimes
}

// timed is s's record when s is the session whose calls replays measure
// against (nil for any other: a replay's leg, an --isolation call
// session).
func (t *sessionTimes) timed(s *sandbox.Session) *sessionTimes {
	if t == nil || t.s != s {
		return nil
	}
	return t
}

func (t *sessionTimes) sent(seq int) *callTimes {
	if t == nil {
		return nil
	}
	c := &callTimes{sent: time.Now()}
	t.calls[seq] = c
	return c
}

// closed says call seq's window closed now (the "between" phase after it
// was read); a later close (the calls of tools that appeared late come
// after) widens it.
func (t *sessionTimes) closed(seq int) {
	if t == nil {
		return
	}
	if c := t.calls[seq]; c != nil {
		c.end = time.Now()
	}
}

// legTimes are a leg's own: when it was open and when each prefix call
// was sent and answered.
type legTimes struct {
	opened time.Time
	calls  []callTimes
}

// horizon is how long after start (the leg's window's start) a leg
// replaying call seq after the calls prefix (seqs of the main session,
// in order) watches, and false when the scan's times cannot say (a call
// of another session, a window never closed). answered is when the
// replayed call was answered in the leg (zero in the control): a call
// slower in the leg than in the scan leaves what it set off after its
// answer that much later.
func (t *sessionTimes) horizon(seq int, prefix []int, leg legTimes, start, answered time.Time) (time.Duration, bool) {
	if t == nil || len(prefix) != len(leg.calls) {
		return 0, false
	}
	o := t.calls[seq]
	if o == nil || o.end.IsZero() {
		return 0, false
	}
	var skew time.Duration
	add := func(scan, legAt time.Time) {
		skew = max(skew, o.sent.Sub(scan)-start.Sub(legAt))
	}
	add(t.opened, leg.opened)
	for i, k := range prefix {
		p := t.calls[k]
		if p == nil || p.answered.IsZero() {
			return 0, false
		}
		add(p.sent, leg.calls[i].sent)
		add(p.answered, leg.calls[i].answered)
	}
	if !answered.IsZero() && !o.answered.IsZero() {
		add(o.answered, answered)
	}
	return o.end.Sub(o.sent) + skew + controlMargin, true
}

// watchLeg keeps a leg observing until start+h, then while a reading
// finds a task acting (or cannot tell), to start+most at the latest
// (capped: a task still acted then). Without readings it keeps
// --linger's window past the horizon, as a leg did before.
func (sc *scanner) watchLeg(s *sandbox.Session, base *quietBase, start time.Time, h, most time.Duration) (why string, capped bool) {
	most = max(most, h)
	if base == nil || base.err != nil {
		sleepLost(sc.ctx, s, time.Until(start.Add(max(h, sc.opts.Linger))))
		return "its window (no quiet readings)", false
	}
	sleepLost(sc.ctx, s, time.Until(start.Add(h)))
	poll := lingerPollMin
	for {
		if sc.ctx.Err() != nil || s.LostErr(sc.ctx, 0) != nil {
			return "the sandbox or the run ended", false
		}
		left := time.Until(start.Add(most))
		if left <= 0 {
			return "at --linger-max, a task still running", true
		}
		r, err := s.Quiet(sc.ctx)
		if err != nil {
			sleepLost(sc.ctx, s, time.Until(start.Add(max(h, sc.opts.Linger))))
			return "its window (the agent did not answer)", false
		}
		if !busy(r) {
			if poll == lingerPollMin && time.Since(start) < h+lingerPollMin {
				return "at its horizon", false
			}
			return "past its horizon, when nothing ran", false
		}
		sleepLost(sc.ctx, s, min(poll, left))
		poll = min(2*poll, lingerPollMax)
	}
}

// busy tells a reading with a task that runs (or ran between its two
// passes), or that could not be read whole.
func busy(r agent.QuietReading) bool {
	if r.Err != "" || r.More > 0 {
		return true
	}
	for _, w := range r.Wakeups {
		if acting(w) {
			return true
		}
	}
	return false
}
