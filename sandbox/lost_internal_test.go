package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
)

// TestLifeWatchTellsTheRunnersDoingFromOthers: what the engine does to
// the container after the runner asked for its end is the runner's; before
// it, a kill, a pause, a stop, a removal, a restart or a second start is
// a loss, and the server's own death is not.
func TestLifeWatchTellsTheRunnersDoingFromOthers(t *testing.T) {
	msg := func(a events.Action) events.Message {
		return events.Message{Action: a, Actor: events.Actor{Attributes: map[string]string{"signal": "9"}}}
	}
	for _, tc := range []struct {
		name   string
		before []events.Action // before the runner asks
		after  []events.Action
		lost   bool
	}{
		{"the server's own exit", []events.Action{events.ActionStart, events.ActionDie}, nil, false},
		{"the runner's kill and removal", []events.Action{events.ActionStart}, []events.Action{events.ActionKill, events.ActionDie, events.ActionDestroy}, false},
		{"a kill from outside", []events.Action{events.ActionStart, events.ActionKill, events.ActionDie}, nil, true},
		{"a pause", []events.Action{events.ActionStart, events.ActionPause}, nil, true},
		{"a stop", []events.Action{events.ActionStart, events.ActionStop}, nil, true},
		{"a removal", []events.Action{events.ActionStart, events.ActionDestroy}, nil, true},
		{"a restart", []events.Action{events.ActionStart, events.ActionRestart}, nil, true},
		{"a second start", []events.Action{events.ActionStart, events.ActionDie, events.ActionStart}, nil, true},
	} {
		w := newLifeWatch(0)
		for _, a := range tc.before {
			w.event(msg(a))
		}
		w.ask()
		for _, a := range tc.after {
			w.event(msg(a))
		}
		if got := w.lostWhy() != ""; got != tc.lost {
			t.Errorf("%s: lost %v (%q), want %v", tc.name, got, w.lostWhy(), tc.lost)
		}
	}
}

// inspectOnly answers ContainerInspect with one state; nothing else.
type inspectOnly struct {
	Engine
	state container.State
}

func (f inspectOnly) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	st := f.state
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &st}}, nil
}

// TestInitKilledFromOutsideIsALoss: a container whose agent ended without
// its last frame, without crash output and not by the memory limit was
// killed from outside (the engine says nothing of a SIGKILL sent from the
// host to its PID 1); one whose agent said its last word ended on its
// own (the server's exit, whatever its code), and so did one killed by
// the memory limit, by the runner (the disk bound), or without an agent.
// A stream that has not drained claims nothing.
func TestInitKilledFromOutsideIsALoss(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		agent, ended, raw    bool
		oom, ours, undrained bool
		lost                 bool
	}{
		{name: "no last word", agent: true, lost: true},
		{name: "the server's exit", agent: true, ended: true},
		{name: "the agent's crash output", agent: true, raw: true},
		{name: "the memory limit", agent: true, oom: true},
		{name: "the runner's own kill", agent: true, ours: true},
		{name: "no agent", agent: false},
		{name: "not drained", agent: true, undrained: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Container{ID: "c1", cli: inspectOnly{state: container.State{ExitCode: 137, OOMKilled: tc.oom}},
				life: newLifeWatch(50 * time.Millisecond), drained: make(chan struct{}), agent: tc.agent}
			c.agentEnded.Store(tc.ended)
			c.agentRaw.Store(tc.raw)
			if !tc.undrained {
				close(c.drained)
			}
			why, lost := c.lostLook(context.Background(), tc.ours)
			if lost != tc.lost || (lost && !strings.Contains(why, "init was killed from outside")) {
				t.Errorf("lost %v (%q), want %v", lost, why, tc.lost)
			}
		})
	}
}
