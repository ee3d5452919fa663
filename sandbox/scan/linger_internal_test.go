package scan

import (
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// TestLingerHolds: what keeps a linger open, read by read, for the
// wakeups a quiet reading lists (times relative to the linger's start;
// the cap at 30 s, the base read 1 s before the start).
func TestLingerHolds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cap := at(30 * time.Second)
	loop := func(mark string, within time.Duration) agent.Wakeup {
		return agent.Wakeup{PID: 7, TID: 7, Comm: "node", Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: within, Mark: mark}
	}
	sysmon := agent.Wakeup{PID: 7, TID: 9, Reason: "timed-wait", Syscall: "futex", Mark: "m9"}
	worker := agent.Wakeup{PID: 7, TID: 24, Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: 5 * time.Second, Mark: "w0"}
	sleeper := agent.Wakeup{PID: 7, TID: 30, Reason: "timed-wait", Syscall: "read", Mark: "s0"}
	idle := agent.Wakeup{PID: 7, TID: 31, Reason: "timed-wait", Syscall: "clock_nanosleep", Mark: "s0"}
	base := map[thread]agent.Wakeup{keyOf(loop("m0", 10*time.Minute)): loop("m0", 10*time.Minute), keyOf(sysmon): sysmon, keyOf(worker): worker,
		keyOf(sleeper): sleeper, keyOf(idle): idle}
	type read struct {
		at   time.Duration
		w    agent.Wakeup
		want hold
	}
	for name, reads := range map[string][]read{
		"a pre-call thread in a wait of no known time": {{0, sysmon, notHeld}, {5 * time.Second, sysmon, notHeld}},
		"a new thread in a wait of no known time": {
			{0, agent.Wakeup{PID: 7, TID: 12, Reason: "timed-wait", Syscall: "futex", Mark: "a"}, held},
		},
		"a new thread running": {{0, agent.Wakeup{PID: 8, TID: 8, Reason: "running"}, held}},
		"a pre-call thread running": {
			{0, agent.Wakeup{PID: 7, TID: 9, Reason: agent.ReasonRunning}, held},
			{time.Second, agent.Wakeup{PID: 7, TID: 9, Reason: agent.ReasonChanged}, held},
		},
		"the startup wait, not yet run, due after the cap": {
			{0, loop("m0", 10*time.Minute), notHeld},
		},
		"a timer the calls armed, due by the cap, until it fires": {
			{0, loop("m1", 10*time.Second), held},
			{5 * time.Second, loop("m1", 10*time.Second), held},
			// woken early (I/O), back to the rest of its wait: still held
			{6 * time.Second, loop("m2", 4*time.Second), held},
			// it fired at its due time and the loop re-armed (V8's reducer):
			// no longer held, nor anything the loop arms later
			{10*time.Second + 500*time.Millisecond, loop("m3", 8100*time.Millisecond), notHeld},
			{19 * time.Second, loop("m4", 8100*time.Millisecond), notHeld},
		},
		// a second loop's startup timer (5 s), not run since the base, fires
		// and re-arms (15 s, then 40 s, as in two node servers measured)
		"a startup timer that fires and re-arms": {
			{0, agent.Wakeup{PID: 7, TID: 24, Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: 5 * time.Second, Mark: "w0"}, held},
			{5 * time.Second, agent.Wakeup{PID: 7, TID: 24, Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: 15 * time.Second, Mark: "w1"}, notHeld},
		},
		// a pre-call worker thread that a call sets sleeping (time.sleep(10),
		// its time in memory): held until it wakes, then not
		"a pre-call thread's sleep entered since": {
			{0, agent.Wakeup{PID: 7, TID: 30, Reason: "timed-wait", Syscall: "clock_nanosleep", Mark: "s1"}, held},
			{5 * time.Second, agent.Wakeup{PID: 7, TID: 30, Reason: "timed-wait", Syscall: "clock_nanosleep", Mark: "s1"}, held},
			{10 * time.Second, agent.Wakeup{PID: 7, TID: 30, Reason: "timed-wait", Syscall: "clock_nanosleep", Mark: "s2"}, notHeld},
		},
		"a pre-call thread's sleep as before the calls": {
			{0, agent.Wakeup{PID: 7, TID: 31, Reason: "timed-wait", Syscall: "clock_nanosleep", Mark: "s0"}, notHeld},
		},
		// re-armed, then woken sooner than due (a call armed a timer): the
		// new wait holds again
		"a re-armed loop that a call wakes": {
			{0, loop("m1", 5*time.Second), held},
			{5200 * time.Millisecond, loop("m2", 8100*time.Millisecond), notHeld},
			{6 * time.Second, loop("m3", 2*time.Second), held},
		},
		"a timer the calls armed, due after the cap": {
			{0, loop("m1", 60*time.Second), heldPastCap},
		},
		// a 30 s timer armed in the last call, read only as the linger began:
		// it may be due by the cap (it began before the read), so waited for
		"a timer the calls armed, due by the cap if it began before the read": {
			{0, loop("m1", 30*time.Second), held},
		},
		"a new timerfd": {
			{0, agent.Wakeup{PID: 7, TID: 7, Reason: agent.ReasonTimerfd, Detail: "fd 9", Bounded: true, Within: 2 * time.Second, Mark: "m1"}, held},
			{29 * time.Second, agent.Wakeup{PID: 7, TID: 7, Reason: agent.ReasonTimerfd, Detail: "fd 9", Bounded: true, Within: 2 * time.Second, Mark: "m2"}, heldPastCap},
		},
		"a setitimer of no known time": {
			{0, agent.Wakeup{PID: 7, Reason: agent.ReasonITimer, Syscall: "setitimer"}, held},
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := &lingerState{base: &quietBase{at: at(-time.Second), waits: base}, waits: map[thread]loopWait{}, fired: map[thread]bool{}, prev: at(-time.Second)}
			for i, r := range reads {
				if got := l.holds(r.w, at(r.at), cap); got != r.want {
					t.Errorf("read %d at %s: %d, want %d", i, r.at, got, r.want)
				}
				l.prev = at(r.at)
			}
		})
	}
}

// TestLingerFollowsTheCalls: the readings taken while the calls ran tell
// a second loop's backoff (5 s, fired, then 15 s, then 40 s, as in
// desktop-commander) from a wait the calls set: the linger does not hold
// the re-armed one.
func TestLingerFollowsTheCalls(t *testing.T) {
	now := time.Now()
	b := &quietBase{at: now.Add(-20 * time.Second), waits: map[thread]agent.Wakeup{}}
	l := &lingerState{base: b, waits: map[thread]loopWait{}, fired: map[thread]bool{}, prev: b.at}
	worker := func(mark string, within time.Duration) agent.Wakeup {
		return agent.Wakeup{PID: 7, TID: 21, Comm: "node", Reason: "timed-wait", Syscall: "epoll_pwait", Bounded: true, Within: within, Mark: mark}
	}
	ago := func(d time.Duration) int64 { return agent.Now() - int64(d) }
	l.take([]agent.QuietReading{
		{Start: ago(19 * time.Second), Wakeups: []agent.Wakeup{worker("a", 5*time.Second)}},
		{Start: ago(14 * time.Second), Wakeups: []agent.Wakeup{worker("b", 15*time.Second)}},
		{Start: ago(1 * time.Second), Wakeups: []agent.Wakeup{worker("c", 40*time.Second)}},
	})
	if got := l.holds(worker("c", 40*time.Second), now, now.Add(30*time.Second)); got != notHeld {
		t.Errorf("the re-armed wait: %d, want notHeld", got)
	}
	// without the calls' readings, the same wait first read in the linger
	// holds it (it may be the calls')
	l = &lingerState{base: b, waits: map[thread]loopWait{}, fired: map[thread]bool{}, prev: b.at}
	if got := l.holds(worker("c", 40*time.Second), now, now.Add(30*time.Second)); got == notHeld {
		t.Errorf("first read in the linger: notHeld")
	}
}
