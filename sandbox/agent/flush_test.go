//go:build linux && amd64

package agent

import (
	"slices"
	"testing"
)

// TestFlushFloodIsBounded: a server that sends the flush signal to the
// agent in a flood gets ticks no closer than FlushGap, which prove only
// what ticks prove (the stream before them is whole): the program it runs
// after the flood is reported, and the agent ends as the server does.
// With an hour's heartbeat, every tick but the last is a flush's answer.
func TestFlushFloodIsBounded(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--tick", "1h", "--flush", "--", "SELF", probeArg, "flushflood"}})
	if res.code != 0 {
		t.Fatalf("exit code %d", res.code)
	}
	var ticks []int64
	ran := false
	for _, e := range res.events {
		switch e.Kind {
		case KindTick:
			ticks = append(ticks, e.T)
		case KindExec:
			ran = ran || slices.Equal(e.Argv, []string{"/bin/true", "after-the-flood"})
		}
	}
	if !ran {
		t.Errorf("the exec after the flood is missing")
	}
	if len(ticks) < 2 {
		t.Fatalf("%d ticks: the flood was never answered", len(ticks))
	}
	ticks = ticks[:len(ticks)-1] // the agent's last, at its end, answers nobody
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i] - ticks[i-1]; d < int64(FlushGap) {
			t.Fatalf("ticks %d and %d are %d ns apart, under FlushGap (%s)", i-1, i, d, FlushGap)
		}
	}
	t.Logf("%d ticks answered the flood", len(ticks))
}

// TestNoFlushWithoutTheConfig: an agent not told to flush ignores the
// signal (its other signals stay ignored too): the flood makes no tick.
func TestNoFlushWithoutTheConfig(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--tick", "1h", "--", "SELF", probeArg, "flushflood"}})
	if res.code != 0 {
		t.Fatalf("exit code %d", res.code)
	}
	n := 0
	for _, e := range res.events {
		if e.Kind == KindTick {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d ticks, want the last one only", n)
	}
}
