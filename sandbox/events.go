package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// eventStore keeps the agent's events in arrival (and so time) order,
// bounded, and knows how far the stream is known to be complete: every
// event before the last tick has arrived.
type eventStore struct {
	mu      sync.Mutex
	cond    *sync.Cond
	events  []agent.Event
	taken   int
	max     int
	dropped int
	tick    int64 // T of the last tick
	ended   bool  // the stream is over
	started bool  // the agent said it runs
	errors  []string
	// flush, if set, asks the agent for a tick now (see agentFlusher); it
	// is set before the first sync.
	flush func()
	// quiet, if set, asks the agent for a quiet reading (see readQuiet);
	// reading is the last that arrived.
	quiet   func()
	reading *agent.QuietReading
	// history is every reading since the last drain (see drainQuiet),
	// the oldest shed past maxQuietHistory.
	history []agent.QuietReading
}

// maxQuietHistory bounds the readings kept between two drains: the
// linger reads them to learn which of the server's timers fired while
// the calls ran; one shed only makes it hold longer.
const maxQuietHistory = 256

func newEventStore(max int) *eventStore {
	s := &eventStore{max: max}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *eventStore) add(e agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Kind {
	case agent.KindTick:
		s.tick = e.T
		s.cond.Broadcast()
		return
	case agent.KindStart:
		s.started = true
		return
	case agent.KindDropped:
		n, _ := strconv.Atoi(e.Data)
		s.dropped += n
		return
	case agent.KindQuiet:
		var r agent.QuietReading
		if json.Unmarshal([]byte(e.Data), &r) != nil {
			r = agent.QuietReading{Start: e.T, Err: "the reading did not decode"}
		}
		s.reading = &r
		if len(s.history) >= maxQuietHistory {
			s.history = s.history[1:]
		}
		s.history = append(s.history, r)
		s.cond.Broadcast()
		return
	case agent.KindError:
		if len(s.errors) < 20 {
			s.errors = append(s.errors, e.Data)
		}
		return
	}
	if len(s.events)-s.taken >= s.max {
		s.dropped++
		return
	}
	s.events = append(s.events, e)
	if e.Kind == agent.KindExec && e.PPID == 1 {
		s.cond.Broadcast() // for waitExec; other waiters wake at ticks
	}
}

func (s *eventStore) end() {
	s.mu.Lock()
	s.ended = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// sync waits, bounded, until every event up to time m has arrived: a tick
// at or after m, or the end of the stream. The agent is asked for that
// tick at once, when it can be: else it comes with the next heartbeat.
func (s *eventStore) sync(ctx context.Context, m int64, bound time.Duration) {
	if s.flush != nil {
		s.flush()
	}
	// Before the agent's first word, wait for it too: the first phase must
	// not close before the agent can report what happened in it.
	s.waitFor(ctx, bound, func() bool { return s.ended || s.tick >= m })
}

// errNoQuiet marks a sandbox whose agent cannot be asked for a quiet
// reading (no agent, or no pidfd to signal it).
var errNoQuiet = errors.New("no quiet reading: the agent cannot be asked")

// askQuiet asks the agent for a reading and does not wait for it (it
// joins the history); false when the agent cannot be asked.
func (s *eventStore) askQuiet() bool {
	if s.quiet == nil {
		return false
	}
	s.quiet()
	return true
}

// drainQuiet returns the readings that arrived since the last drain, in
// order, and forgets them.
func (s *eventStore) drainQuiet() []agent.QuietReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.history
	s.history = nil
	return h
}

// readQuiet asks the agent for a quiet reading and waits, bounded, for
// one begun after the request (whoever asked for it: a reading is true
// whoever asked). The end of the stream is a quiet sandbox: the agent
// ends only once the server has, and everything in the container dies
// with it.
func (s *eventStore) readQuiet(ctx context.Context, bound time.Duration) (agent.QuietReading, error) {
	if s.quiet == nil {
		return agent.QuietReading{}, errNoQuiet
	}
	req := agent.Now()
	s.quiet()
	var r agent.QuietReading
	ok := false
	s.waitFor(ctx, bound, func() bool {
		switch {
		case s.ended:
			r, ok = agent.QuietReading{Start: req}, true
		case s.reading != nil && s.reading.Start >= req:
			r, ok = *s.reading, true
		}
		return ok
	})
	if !ok {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		return r, fmt.Errorf("no quiet reading within %s", bound)
	}
	return r, nil
}

// waitFor waits, bounded, until done (called with mu held) holds; it is
// checked again at each tick, at the end of the stream, and at each exec
// by a child of the agent.
func (s *eventStore) waitFor(ctx context.Context, bound time.Duration, done func() bool) {
	// The waiter stops on a flag the timer sets under the lock, not on a
	// clock read of its own: a deadline computed apart from the timer can
	// fall after the timer's only wake-up, and the wait never ends.
	expired := false
	wake := func() {
		s.mu.Lock()
		expired = true
		s.cond.Broadcast()
		s.mu.Unlock()
	}
	timer := time.AfterFunc(bound, wake)
	defer timer.Stop()
	stop := context.AfterFunc(ctx, wake)
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !done() && !expired {
		s.cond.Wait()
	}
}

// take returns the events up to time m not taken before.
func (s *eventStore) take(m int64) []agent.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.taken
	for i < len(s.events) && s.events[i].T <= m {
		i++
	}
	out := append([]agent.Event(nil), s.events[s.taken:i]...)
	// Drop what was taken, so memory follows the backlog, not the run.
	s.events = append(s.events[:0], s.events[i:]...)
	s.taken = 0
	return out
}

func (s *eventStore) status() (started bool, dropped int, errs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started, s.dropped, append([]string(nil), s.errors...)
}

// peekExits returns the pids whose exit is among the events not yet taken.
func (s *eventStore) peekExits() map[int]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitsLocked()
}

func (s *eventStore) exitsLocked() map[int]bool {
	m := map[int]bool{}
	for _, e := range s.events[s.taken:] {
		if e.Kind == agent.KindExit {
			m[e.PID] = true
		}
	}
	if s.ended {
		m[-1] = true
	}
	return m
}

// waitExec waits, bounded, until an exec by a child of the agent (the
// server starting) has arrived, or the stream ended.
func (s *eventStore) waitExec(ctx context.Context, bound time.Duration) {
	s.waitFor(ctx, bound, func() bool {
		if s.ended {
			return true
		}
		for _, e := range s.events[s.taken:] {
			if e.Kind == agent.KindExec && e.PPID == 1 {
				return true
			}
		}
		return false
	})
}
