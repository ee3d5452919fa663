package sandbox

import (
	"testing"

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
