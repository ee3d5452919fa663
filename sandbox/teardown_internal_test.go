package sandbox

import (
	"context"
	"errors"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// slowRemover is an engine whose removal never ends on its own, as the
// engine's removal of a container of 200,000 files takes it 20 s: each
// request waits for its context (or release). With received set it says,
// as the HTTP client does once the request is written, that the engine
// has the request.
type slowRemover struct {
	Engine
	received bool
	// sendAfter delays the request's being written (a loaded engine).
	sendAfter time.Duration
	// slowKill makes a kill wait for its context too; killCause is then
	// told what ended it.
	slowKill  bool
	killCause chan error
	release   chan struct{}
	// asked is told of each removal; cause is what ended its context
	// (nil: released before it ended).
	asked chan struct{}
	cause chan error
}

func newSlowRemover(received bool) *slowRemover {
	return &slowRemover{received: received, release: make(chan struct{}), asked: make(chan struct{}, 1), cause: make(chan error, 1)}
}

func (f *slowRemover) ContainerRemove(ctx context.Context, _ string, _ container.RemoveOptions) error {
	if t := httptrace.ContextClientTrace(ctx); f.received && t != nil && t.WroteRequest != nil {
		time.Sleep(f.sendAfter)
		t.WroteRequest(httptrace.WroteRequestInfo{})
	}
	f.asked <- struct{}{}
	select {
	case <-ctx.Done():
		f.cause <- context.Cause(ctx)
		return ctx.Err()
	case <-f.release:
		f.cause <- nil
		return nil
	case <-time.After(time.Minute): // only so that a failure does not hang
		f.cause <- errors.New("never cut")
		return errors.New("never cut")
	}
}

func (f *slowRemover) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &container.State{Status: "exited"}}}, nil
}

func (f *slowRemover) ContainerKill(ctx context.Context, _, _ string) error {
	if !f.slowKill {
		return nil
	}
	select {
	case <-ctx.Done():
		f.killCause <- ctx.Err()
		return ctx.Err()
	case <-time.After(time.Minute): // only so that a failure does not hang
		f.killCause <- nil
		return errors.New("never cut")
	}
}

// teardownSession is a session over a container of f's whose server
// has exited and whose output has drained, as far as its teardown looks
// at one.
func teardownSession(f Engine) *Session {
	s := newSession(f, SessionOptions{Image: "img", Argv: []string{"srv"}})
	s.ctr = &Container{ID: "c0ffee", cli: f, stderr: &tailBuffer{max: 1 << 10}, life: newLifeWatch(0),
		demux: make(chan error, 1), drained: make(chan struct{})}
	s.ctr.demux <- nil
	close(s.ctr.drained)
	s.rec = &recorder{}
	return s
}

func teardownProblems(s *Session) []string {
	var out []string
	for _, p := range s.rep.Problems {
		if p.Kind == "teardown" {
			out = append(out, p.Message)
		}
	}
	return out
}

// TestTeardownPastDeadlineLeavesTheRemovalToTheEngine: a session closed
// past its run's deadline (and past TeardownGrace) asks the engine to
// remove the container, and once the engine has the request stops
// waiting (the removal's context is cut by the runner, not by the
// engine's answer): the report says the engine goes on with it, a note
// and not an error, and keeps what the request ended with.
func TestTeardownPastDeadlineLeavesTheRemovalToTheEngine(t *testing.T) {
	f := newSlowRemover(true)
	s := teardownSession(f)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Minute))
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v, want no error (the removal goes on in the engine)", err)
	}
	if cause := <-f.cause; !errors.Is(cause, errStoppedWaiting) {
		t.Errorf("the removal's context ended with %v, want the runner's %v", cause, errStoppedWaiting)
	}
	msgs := teardownProblems(s)
	if len(msgs) != 1 || !strings.Contains(msgs[0], "goes on with it") || !strings.Contains(msgs[0], "context canceled") ||
		!strings.Contains(msgs[0], "reaper") {
		t.Errorf("teardown problems %q, want one saying the engine goes on with the removal, with the request's error", msgs)
	}
}

// TestTeardownPastDeadlineRemovalNeverSent: past the bound, a removal
// whose request has not reached the engine is still waited for (a
// request never sent leaves the container running): up to the removal's
// own bound, whose end is then an error, not a note, saying the reaper
// removes the container.
func TestTeardownPastDeadlineRemovalNeverSent(t *testing.T) {
	f := newSlowRemover(false)
	s := teardownSession(f)
	s.ctr.removeTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Minute))
	defer cancel()
	err := s.Close(ctx)
	var left *removalLeft
	if errors.As(err, &left) {
		t.Fatalf("Close: %v, a removal left to an engine that never had the request", err)
	}
	if cause := <-f.cause; !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("the removal's context ended with %v, want its own bound (never the runner's wait past the deadline)", cause)
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") || !strings.Contains(err.Error(), "reaper") {
		t.Errorf("Close: %v, want the removal's bound said", err)
	}
}

// TestTeardownPastDeadlineRemovalSentLate: a request that reaches the
// engine past the bound (a loaded engine) is waited for until it does,
// and the note says how late it went.
func TestTeardownPastDeadlineRemovalSentLate(t *testing.T) {
	f := newSlowRemover(true)
	f.sendAfter = removeSendWait + removeSendWait/2
	s := teardownSession(f)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Minute))
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v, want no error (the engine has the request)", err)
	}
	if cause := <-f.cause; !errors.Is(cause, errStoppedWaiting) {
		t.Errorf("the removal's context ended with %v, want the runner's %v", cause, errStoppedWaiting)
	}
	msgs := teardownProblems(s)
	if len(msgs) != 1 || !strings.Contains(msgs[0], "goes on with it") || !strings.Contains(msgs[0], "reached the engine only") {
		t.Errorf("teardown problems %q, want one saying the request went late", msgs)
	}
}

// TestTeardownWithinTheRunWaitsForTheRemoval: with no deadline (or
// before it) the removal is waited for until the engine answers: its
// context is not cut by the runner.
func TestTeardownWithinTheRunWaitsForTheRemoval(t *testing.T) {
	f := newSlowRemover(true)
	s := teardownSession(f)
	done := make(chan error, 1)
	go func() { done <- s.Close(context.Background()) }()
	<-f.asked
	select {
	case err := <-done:
		t.Fatalf("Close returned (%v) before the engine answered", err)
	default:
	}
	close(f.release)
	if err := <-done; err != nil {
		t.Errorf("Close: %v", err)
	}
	if cause := <-f.cause; cause != nil {
		t.Errorf("the removal's context ended (%v) before the engine answered", cause)
	}
	if msgs := teardownProblems(s); len(msgs) > 0 {
		t.Errorf("teardown problems %q", msgs)
	}
}

// TestRemovalTimeoutWithinTheRunIsAnError: a removal that the engine does
// not answer within its bound, in a teardown within the run's deadline,
// is an error that keeps the client's text and says what it means.
func TestRemovalTimeoutWithinTheRunIsAnError(t *testing.T) {
	f := newSlowRemover(true)
	err := removeBy(context.Background(), f, "c0ffee", time.Time{}, 10*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("removeBy: %v, want the deadline's error", err)
	}
	var left *removalLeft
	if errors.As(err, &left) {
		t.Errorf("removeBy: %v is a removal left to the engine, want an error", err)
	}
	for _, want := range []string{"removing container c0ffee", "context deadline exceeded", "did not answer within 10ms", "reaper"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestRemovalBoundIgnoresCancel: a removal is asked whatever its
// caller's context says (a cancelled run must still remove its
// container), and is cut only by its own bound.
func TestRemovalBoundIgnoresCancel(t *testing.T) {
	f := newSlowRemover(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- removeBy(ctx, f, "c0ffee", time.Time{}, removeTimeout) }()
	<-f.asked
	close(f.release)
	if err := <-done; err != nil {
		t.Errorf("removeBy with a cancelled context: %v", err)
	}
}

// TestTeardownPastDeadlineBoundsEveryEngineCall: past the teardown's
// bound a kill the engine does not answer (its kill waits for the
// container's end) is cut by it, and the wait for the server's output to
// drain (up to 5 s) is not made; both the kill and the removal are then
// notes that keep the client's text, not errors: the removal is forced,
// and the engine has both requests.
func TestTeardownPastDeadlineBoundsEveryEngineCall(t *testing.T) {
	f := newSlowRemover(true)
	f.slowKill, f.killCause = true, make(chan error, 1)
	s := teardownSession(f)
	<-s.ctr.demux // the output never drains
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Minute))
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cause := <-f.killCause; !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("the kill's context ended with %v, want the teardown's deadline", cause)
	}
	if cause := <-f.cause; !errors.Is(cause, errStoppedWaiting) {
		t.Errorf("the removal's context ended with %v, want the runner's", cause)
	}
	msgs := teardownProblems(s)
	if len(msgs) != 2 || !strings.Contains(msgs[0], "killing container c0ffee: context deadline exceeded") ||
		!strings.Contains(msgs[0], "forced removal kills it") || !strings.Contains(msgs[1], "goes on with it") {
		t.Errorf("teardown problems %q, want the kill's and the removal's notes", msgs)
	}
}

// lateSource is a change source that records whether the context of each
// snapshot had ended when it was asked, and adds one file.
type lateSource struct{ ended []bool }

func (l *lateSource) Snapshot(ctx context.Context, _ overlay.SnapshotOptions) (overlay.Snapshot, error) {
	l.ended = append(l.ended, ctx.Err() != nil)
	if ctx.Err() != nil {
		return overlay.Snapshot{}, ctx.Err()
	}
	return overlay.Snapshot{Count: 1, Entries: map[string]overlay.Entry{"/tmp/late": {Kind: overlay.Added, Type: overlay.File}}}, nil
}

func (l *lateSource) Close(context.Context) error { return nil }

// TestTeardownPastItsBoundStillReadsTheEffects: a teardown that starts
// past its bound (a call that ended late) still makes its last snapshot,
// which stops at the deadline by itself, rather than losing the
// teardown's effects to a context already ended.
func TestTeardownPastItsBoundStillReadsTheEffects(t *testing.T) {
	f := newSlowRemover(true)
	s := teardownSession(f)
	src := &lateSource{}
	s.rec.src, s.rec.maxListed = src, 10
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Minute))
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if len(src.ended) != 1 || src.ended[0] {
		t.Fatalf("snapshots asked with an ended context: %v", src.ended)
	}
	n := len(s.rep.Phases)
	if n == 0 || s.rep.Phases[n-1].Name != "teardown" || len(s.rep.Phases[n-1].Effects.Files) != 1 {
		t.Errorf("phases %+v, want the teardown's with its file", s.rep.Phases)
	}
}
