package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// quietSession opens a session of argv in the node image with mounts,
// closed at the test's end.
func quietSession(t *testing.T, argv []string, mounts ...sandbox.Mount) *sandbox.Session {
	t.Helper()
	ctx := context.Background()
	cli := sandboxtest.Docker(t)
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	s, err := sandbox.Open(ctx, cli, sandbox.SessionOptions{Image: sandboxtest.NodeImage(t, cli), Argv: argv, Mounts: mounts,
		Agent: sandboxtest.Agent(t), RunID: runID})
	t.Cleanup(func() {
		if err := s.Close(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// TestQuietReadings: the agent reads a real npm server idle between calls
// (server-memory: nothing but node's own timers can act until the runner
// writes), and tells a
// timer a call armed (the Go fixture's timer_write: its runtime's
// epoll_pwait, with the timer's time as its bound), and an alarm, which
// /proc does not show and the tracer recorded.
func TestQuietReadings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("server-memory idle", func(t *testing.T) {
		t.Parallel()
		s := quietSession(t, []string{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-memory/dist/index.js"}, sandboxtest.NPM(t))
		if _, err := s.ListTools(ctx); err != nil {
			t.Fatal(err)
		}
		// Node arms timers of its own (V8's memory reducer: about 8 s, then
		// again while the machine is loaded): the loop's epoll_pwait has a
		// bound; whether it ends in a quiet reading within the test's
		// readings depends on the load, so either will do. No wait of no
		// bound may be read: an idle node server waits only for its
		// timers and its input.
		var r agent.QuietReading
		for i := 0; i < 20; i++ {
			var err error
			if r, err = s.Quiet(ctx); err != nil {
				t.Fatal(err)
			}
			if r.Quiet() {
				return
			}
			for _, w := range r.Wakeups {
				// threads that run (V8's collector on a loaded machine) act and
				// end; what must not be is a wait of no bound
				acting := w.Reason == agent.ReasonRunning || w.Reason == agent.ReasonChanged || w.Reason == agent.ReasonTransient
				if !w.Bounded && !acting {
					t.Fatalf("a wait with no bound in an idle server: %+v", r)
				}
				if w.Bounded && w.Within > time.Minute {
					t.Fatalf("a timer past a minute in an idle server: %+v", r)
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	t.Run("fixture timers", func(t *testing.T) {
		t.Parallel()
		s := quietSession(t, []string{sandboxtest.FixtureMount, "timer_write", "alarm_write"}, sandboxtest.Fixture(t))
		call := func(seq int, tool string, args any) {
			b, _ := json.Marshal(args)
			if c := s.Call(ctx, sandbox.CallRequest{Seq: seq, Tool: tool, Arguments: b}); c.Error != "" || c.IsError {
				t.Fatalf("%s: %+v", tool, c)
			}
		}
		call(1, "timer_write", map[string]any{"ms": 600_000, "name": "t.txt"})
		call(2, "alarm_write", map[string]any{"ms": 500_000, "name": "a.txt"})
		r, err := s.Quiet(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var epoll, alarm *agent.Wakeup
		for i, w := range r.Wakeups {
			switch {
			case w.Syscall == "epoll_pwait" && w.Bounded && w.Within > 0:
				epoll = &r.Wakeups[i]
			case w.Reason == "itimer" && w.Syscall == "alarm":
				alarm = &r.Wakeups[i]
			}
		}
		if epoll == nil || epoll.Within > 600_000_000_000 {
			t.Errorf("no timed epoll_pwait within the timer's 600 s: %+v", r)
		}
		if alarm == nil || !alarm.Bounded || alarm.Within > 500_000_000_000 || alarm.Within < 400_000_000_000 {
			t.Errorf("no alarm due within 500 s: %+v", r)
		}
		if r.Quiet() {
			t.Errorf("quiet with a timer armed")
		}
	})
}
