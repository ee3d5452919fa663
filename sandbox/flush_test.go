package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// flushScript runs, for each line on stdin, a program named by the line,
// then says so on stdout; with FLOOD set it first sends the agent (PID 1)
// that many flush signals, as a server may.
const flushScript = `while read line; do
  n=0; while [ "$n" -lt "${FLOOD:-0}" ]; do kill -USR1 1; n=$((n+1)); done
  /bin/true "$line"
  echo "ran $line"
done`

// TestMarkWaitsForTheAgentsFlush: with a heartbeat of an hour, a mark
// still gets the program the server ran just before it, because the
// runner asks the agent for a tick and waits for it; also while the
// server floods the agent with the same request. Without the request
// (heartbeat-only), the mark ends at its bound without it: the event is
// then only in the agent's backlog, which is what the request flushes.
func TestMarkWaitsForTheAgentsFlush(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, ref, runID := agentSandbox(ctx, t)
	for _, tc := range []struct {
		name  string
		flush bool
		flood int
		bound time.Duration // the mark's
	}{
		{"flush", true, 0, time.Minute},
		{"flush-under-a-flood", true, 300, time.Minute},
		{"heartbeat-only", false, 0, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := sandbox.ContainerOptions{Image: ref, Argv: []string{"/bin/sh", "-c", flushScript}, RunID: runID, Agent: true,
				Env: []string{fmt.Sprintf("FLOOD=%d", tc.flood)}}
			sandbox.AgentTicks(&opts, time.Hour, tc.flush)
			c, err := sandbox.Start(ctx, cli, opts)
			if c != nil {
				defer c.Close(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.flush && !c.Flushing() {
				if os.Geteuid() != 0 {
					t.Skip("the runner cannot signal the container's processes (not root): marks wait for the heartbeat")
				}
				t.Fatal("the runner, root, does not ask the agent for ticks")
			}
			out := bufio.NewReader(c.Stdout())
			for i := range 5 {
				line := fmt.Sprintf("mark-%d", i)
				if _, err := fmt.Fprintln(c.Stdin(), line); err != nil {
					t.Fatal(err)
				}
				if got, err := out.ReadString('\n'); err != nil || got != "ran "+line+"\n" {
					t.Fatalf("stdout %q, %v", got, err)
				}
				seen := false
				for _, e := range c.SyncEvents(ctx, tc.bound) {
					seen = seen || (e.Kind == agent.KindExec && slices.Equal(e.Argv, []string{"/bin/true", line}))
				}
				if seen != tc.flush {
					t.Fatalf("mark %d: the exec of /bin/true %s seen: %v, want %v", i, line, seen, tc.flush)
				}
				if !tc.flush {
					break // one mark shows it
				}
			}
		})
	}
}

// BenchmarkMarkSync is one mark's wait for the agent's stream, after the
// server ran a program: asking the agent for a tick (flush) beside
// waiting for its 10 ms heartbeat (heartbeat), in containers started
// side by side.
func BenchmarkMarkSync(b *testing.B) {
	cli := sandboxtest.Docker(b)
	img := sandboxtest.NodeImage(b, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(b, cli, runID)
	ref, err := sandbox.AgentImage(ctx, cli, img, sandboxtest.Agent(b), runID)
	if err != nil {
		b.Fatal(err)
	}
	for _, flush := range []bool{true, false} {
		name := map[bool]string{true: "flush", false: "heartbeat"}[flush]
		opts := sandbox.ContainerOptions{Image: ref, Argv: []string{"/bin/sh", "-c", flushScript}, RunID: runID, Agent: true}
		sandbox.AgentTicks(&opts, 10*time.Millisecond, flush)
		c, err := sandbox.Start(ctx, cli, opts)
		if c != nil {
			defer c.Close(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		out := bufio.NewReader(c.Stdout())
		b.Run(name, func(b *testing.B) {
			var waited time.Duration
			for i := 0; i < b.N; i++ {
				fmt.Fprintln(c.Stdin(), "x")
				if _, err := out.ReadString('\n'); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				c.SyncEvents(ctx, time.Minute)
				waited += time.Since(t0)
			}
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N), "µs-wait/op")
		})
	}
}
