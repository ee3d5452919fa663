package scan

import (
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// TestHorizon: a leg watches the replayed call's window in the scan, plus
// how much sooner than in the scan it reached its window after each
// earlier event (a prefix that ran faster leaves the prefix's timers due
// later in the leg's window), plus controlMargin; never less for a leg
// that ran slower; and the scan's times must cover every prefix call.
func TestHorizon(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// The scan: open at 0, call 1 sent at 100 and answered at 110, call 2
	// (the replayed one) sent at 900, its window closed at 1,000.
	scan := &sessionTimes{opened: at(0), calls: map[int]*callTimes{
		1: {sent: at(100), answered: at(110), end: at(400)},
		2: {sent: at(900), answered: at(950), end: at(1000)},
	}}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name  string
		leg   legTimes
		start time.Time
		want  time.Duration
		ok    bool
	}{
		// the leg as the scan: the window and the margin
		{"same pace", legTimes{opened: at(5000), calls: []callTimes{{sent: at(5100), answered: at(5110)}}}, at(5900), ms(100) + controlMargin, true},
		// call 1 to the window took 790 ms in the scan, 190 in the leg: a
		// timer call 1 armed lands 600 ms later in the leg's window
		{"faster prefix", legTimes{opened: at(5000), calls: []callTimes{{sent: at(5700), answered: at(5710)}}}, at(5900), ms(100+600) + controlMargin, true},
		// from the open, 900 in the scan and 300 in the leg: a startup
		// timer lands 600 ms later
		{"faster from the start", legTimes{opened: at(5000), calls: []callTimes{{sent: at(5100), answered: at(5110)}}}, at(5300), ms(100+600) + controlMargin, true},
		// a slower leg: its prefix's timers land sooner, the window as is
		{"slower prefix", legTimes{opened: at(5000), calls: []callTimes{{sent: at(5100), answered: at(5110)}}}, at(7000), ms(100) + controlMargin, true},
		{"a prefix the scan did not time", legTimes{opened: at(5000)}, at(5900), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := scan.horizon(2, []int{1}, tc.leg, tc.start, time.Time{})
			if ok != tc.ok || h != tc.want {
				t.Fatalf("horizon %s, %t; want %s, %t", h, ok, tc.want, tc.ok)
			}
		})
	}
	// The replayed call answered 50 ms after it was sent in the scan,
	// 1,050 ms in the replay: what it set off after answering lands 1 s
	// later there.
	same := legTimes{opened: at(5000), calls: []callTimes{{sent: at(5100), answered: at(5110)}}}
	if h, _ := scan.horizon(2, []int{1}, same, at(5900), at(6950)); h != ms(100+1000)+controlMargin {
		t.Errorf("a call slower in the replay: horizon %s", h)
	}
	if h, _ := scan.horizon(2, []int{1}, same, at(5900), at(5910)); h != ms(100)+controlMargin {
		t.Errorf("a call faster in the replay: horizon %s", h)
	}
	if _, ok := scan.horizon(3, nil, legTimes{}, at(0), time.Time{}); ok {
		t.Error("a call the scan did not make has a horizon")
	}
	open := &sessionTimes{opened: at(0), calls: map[int]*callTimes{1: {sent: at(100), answered: at(110)}}}
	if _, ok := open.horizon(1, nil, legTimes{opened: at(10)}, at(100), time.Time{}); ok {
		t.Error("a call whose window never closed has a horizon")
	}
	var none *sessionTimes
	if none.timed(nil) != nil || none.sent(1) != nil {
		t.Error("no session's times record calls")
	}
	none.closed(1)
}

// TestBusyHoldsALeg: past its horizon a leg watches on only while a task
// runs or the reading was not whole; a timed wait (V8's memory reducer, a
// prefix's timer due later) does not hold it.
func TestBusyHoldsALeg(t *testing.T) {
	for _, tc := range []struct {
		r    agent.QuietReading
		want bool
	}{
		{agent.QuietReading{}, false},
		{agent.QuietReading{Wakeups: []agent.Wakeup{{Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: 8 * time.Second}}}, false},
		{agent.QuietReading{Wakeups: []agent.Wakeup{{Reason: agent.ReasonRunning}}}, true},
		{agent.QuietReading{Wakeups: []agent.Wakeup{{Reason: agent.ReasonChanged}}}, true},
		{agent.QuietReading{More: 1}, true},
		{agent.QuietReading{Err: "reading /proc: permission denied"}, true},
	} {
		if got := busy(tc.r); got != tc.want {
			t.Errorf("busy(%+v) = %t, want %t", tc.r, got, tc.want)
		}
	}
}
