package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ErrSandboxLost marks a session whose container was removed, killed,
// stopped, restarted or paused by someone other than the runner: what was
// seen until then is kept, but it is no result (the report is incomplete).
var ErrSandboxLost = errors.New("the sandbox was lost")

// createContext is the context a container is created with: without
// ctx's cancel, since a create cut off (by a signal) may still make the
// container, and leave it with no id to remove it by; bounded by
// removeTimeout. What follows the create, with ctx, fails at once, and
// the removal registered after it runs.
func createContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
}

// eventEngine is the part of the Engine API that watches a container's
// life. An Engine without it (a test's fake) is watched by inspection
// alone.
type eventEngine interface {
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)
}

// DefaultLostWait bounds the wait, once a container has ended, for the
// engine's event of its end: the events before it (a kill from outside)
// have then arrived.
const DefaultLostWait = 2 * time.Second

// lifeWatch is the engine's view of a container's life from its creation:
// what was done to it that the runner did not ask for.
type lifeWatch struct {
	wait   time.Duration // see DefaultLostWait
	cancel context.CancelFunc

	mu        sync.Mutex
	asked     bool   // the runner stops or removes it from now on
	why       string // how it was lost; "" while it is not
	starts    int    // the engine's start events (the first is the runner's)
	startedAt string // its State.StartedAt after the runner's start
	watched   bool   // the engine's events are read
	lost      chan struct{}
	died      chan struct{} // the engine said it ended
	diedOnce  sync.Once
}

func newLifeWatch(wait time.Duration) *lifeWatch {
	if wait <= 0 {
		wait = DefaultLostWait
	}
	return &lifeWatch{wait: wait, lost: make(chan struct{}), died: make(chan struct{}), cancel: func() {}}
}

// watch reads the engine's events of container id from since (before its
// creation) until stop.
func (w *lifeWatch) watch(ctx context.Context, cli Engine, id string, since time.Time) {
	ee, ok := cli.(eventEngine)
	if !ok {
		return
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	msgs, errs := ee.Events(ctx, events.ListOptions{
		Since:   strconv.FormatInt(since.Unix(), 10),
		Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", id)),
	})
	w.mu.Lock()
	w.watched = true
	w.mu.Unlock()
	go func() {
		for {
			select {
			case m := <-msgs:
				w.event(m)
			case <-errs:
				// The stream ended (stop, or the engine went away): the
				// inspections at each mark still tell.
				w.mu.Lock()
				w.watched = false
				w.mu.Unlock()
				return
			}
		}
	}()
}

// event takes one of the engine's events of the container.
func (w *lifeWatch) event(m events.Message) {
	switch m.Action {
	case events.ActionDie:
		w.diedOnce.Do(func() { close(w.died) })
	case events.ActionStart:
		w.mu.Lock()
		w.starts++
		again := w.starts > 1
		w.mu.Unlock()
		if again {
			w.lose("it was started again from outside")
		}
	case events.ActionKill:
		w.lose(fmt.Sprintf("it was killed from outside (signal %s)", m.Actor.Attributes["signal"]))
	case events.ActionStop:
		w.lose("it was stopped from outside")
	case events.ActionPause:
		w.lose("it was paused from outside")
	case events.ActionRestart:
		w.lose("it was restarted from outside")
	case events.ActionDestroy:
		w.lose("it was removed from outside")
	}
}

// watching says whether the engine's events of the container are read.
func (w *lifeWatch) watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched
}

// lose records how the container was lost, unless the runner has asked
// for its end: the first reason is kept.
func (w *lifeWatch) lose(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asked || w.why != "" {
		return
	}
	w.why = why
	close(w.lost)
}

// ask says that the runner stops or removes the container from now on:
// what the engine does to it after is the runner's doing.
func (w *lifeWatch) ask() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.asked = true
	w.mu.Unlock()
}

// lostWhy says how the container was lost ("" while it is not).
func (w *lifeWatch) lostWhy() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

func (w *lifeWatch) stop() {
	if w != nil {
		w.cancel()
	}
}

// start records the container's start by the runner: its StartedAt.
func (w *lifeWatch) start(startedAt string) {
	w.mu.Lock()
	w.startedAt = startedAt
	w.mu.Unlock()
}

// Lost says whether the container was lost, and how: removed, killed,
// stopped, restarted, started again or paused by someone else than the
// runner, or its init (the agent) killed from outside. It inspects the
// container; one that has ended is looked at once the engine's event of
// its end has arrived and its output has drained (bounded by the watch's
// wait), so that a kill from outside is told from the server's own exit.
// After the runner asked for its end, only what was seen before counts.
func (c *Container) Lost(ctx context.Context) (string, bool) { return c.lostLook(ctx, false) }

// lostLook is Lost; ours says that the runner itself may have killed the
// container's init from the host (the disk bound does), so that an agent
// ended without its last word is no loss.
//
// A SIGKILL sent from the host straight to the container's PID 1 makes no
// engine event (the engine did not send it): the container just dies, as
// it does when the server exits. But the agent, PID 1 of its own PID
// namespace, cannot be SIGKILLed from inside it (the kernel drops a
// SIGKILL or SIGSTOP sent to a namespace's init by its own processes, and
// the agent ignores the rest), and it writes a last frame
// (agent.KindEnd) whenever it exits on its own, after the server ended
// (whatever way: exit 0, exit 1, its own kill -9). The server cannot
// forge that frame (see agent.Decode). So an agent that ended without it,
// without crash output of its own (bytes that are no frame), and not by
// the memory limit (State.OOMKilled), was killed from outside.
func (c *Container) lostLook(ctx context.Context, ours bool) (string, bool) {
	w := c.life
	if w == nil {
		return "", false
	}
	if why := w.lostWhy(); why != "" {
		return why, true
	}
	w.mu.Lock()
	asked, startedAt, watched := w.asked, w.startedAt, w.watched
	w.mu.Unlock()
	if asked {
		return "", false
	}
	in, err := c.cli.ContainerInspect(ctx, c.ID)
	switch {
	case cerrdefs.IsNotFound(err):
		w.lose("it was removed from outside")
	case err != nil || in.State == nil:
		// Cannot tell: the next look, or teardown, may.
	case in.State.Paused:
		w.lose("it was paused from outside")
	case in.State.Restarting || in.RestartCount > 0:
		w.lose("it was restarted from outside")
	case startedAt != "" && in.State.StartedAt != startedAt:
		w.lose("it was started again from outside")
	case !in.State.Running:
		deadline := time.Now().Add(w.wait)
		if watched {
			waitUntil(ctx, w.died, deadline)
		}
		if !c.agent || ours || in.State.OOMKilled || w.lostWhy() != "" {
			break
		}
		// The agent's last frame, if it wrote one, is in the stream
		// before its end. A stream that has not drained by then tells
		// nothing: no loss is claimed on a guess.
		if waitUntil(ctx, c.drained, deadline) && !c.agentEnded.Load() && !c.agentRaw.Load() {
			w.lose(fmt.Sprintf("its init was killed from outside (the agent, its PID 1, ended with code %d without its last word, and not by the memory limit: nothing inside the sandbox can kill it)", in.State.ExitCode))
		}
	}
	why := w.lostWhy()
	return why, why != ""
}

// waitUntil waits for ch to close, at most until deadline or ctx's end,
// and says whether it closed.
func waitUntil(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// lostSignal is closed once the container is seen lost (nil: never).
func (c *Container) lostSignal() <-chan struct{} {
	if c == nil || c.life == nil {
		return nil
	}
	return c.life.lost
}

// lostKind is the problem kind of a lost sandbox in s's report.
func (s *Session) lostKind() string {
	if s.opts.LostKind != "" {
		return s.opts.LostKind
	}
	return report.ProblemSandboxLost
}

// LostErr says, as an error wrapping ErrSandboxLost, whether the session's
// container was lost (see Container.Lost); the first time, it records the
// problem (on call seq, if any) in the report. Nil while it is not.
func (s *Session) LostErr(ctx context.Context, seq int) error { return s.checkLost(ctx, seq, true) }

// checkLost is LostErr; without look, only what the engine's events
// already said counts (no inspection).
func (s *Session) checkLost(ctx context.Context, seq int, look bool) error {
	if s.ctr == nil {
		return nil
	}
	if s.lost != nil {
		return s.lost
	}
	why := s.ctr.life.lostWhy()
	if why == "" && look {
		// The disk bound kills the container's init from the host: that
		// end is the runner's.
		// A look is not cut by ctx's end (a call past its bound is when
		// a loss is looked for), but past the run's deadline it is
		// bounded as the teardown is: TeardownGrace past it.
		lctx := context.WithoutCancel(ctx)
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			lctx, cancel = context.WithDeadline(lctx, d.Add(TeardownGrace))
			defer cancel()
		}
		why, _ = s.ctr.lostLook(lctx, s.DiskStopped())
	}
	if why == "" {
		return nil
	}
	where := ""
	if seq > 0 {
		where = fmt.Sprintf(" during call %d", seq)
	}
	msg := fmt.Sprintf("container %.12s%s: %s; what was seen until then is kept, and the report is incomplete", s.ctr.ID, where, why)
	s.Problem(s.lostKind(), seq, "the sandbox was lost: %s", msg)
	s.lost = fmt.Errorf("%w: %s", ErrSandboxLost, msg)
	return s.lost
}

// lostNow says how the container was lost, as far as already seen ("":
// not), without asking the engine.
func (s *Session) lostNow() string {
	if s.ctr == nil {
		return ""
	}
	return s.ctr.life.lostWhy()
}

// Lost is the loss recorded so far (wrapping ErrSandboxLost; nil: none):
// after Close, whether the session's sandbox was lost at all.
func (s *Session) Lost() error { return s.lost }

// LostSignal is closed once the session's container is seen lost (nil:
// never), for a wait that a loss cuts short.
func (s *Session) LostSignal() <-chan struct{} { return s.ctr.lostSignal() }

// TeardownErr is what Close's teardown failed on, without the loss (which
// Lost says): for a caller that already said the loss once.
func (s *Session) TeardownErr() error { return s.closeErr }
