//go:build linux && amd64

package agent

import (
	"encoding/json"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent/internal/quiet"
)

// QuietSignal asks the agent to read whether the sandbox is quiet (see
// Config.Quiet). The server can send it too (same uid): that only costs
// a reading, and QuietGap bounds those.
const QuietSignal = unix.SIGUSR2

// quietDuty: a reading waits at least this many times the last one's
// time after it.
const quietDuty = 4

// itimers are the ITIMER_REAL timers the server's processes armed (alarm,
// setitimer), which /proc does not show: the tracer records them at the
// syscall (see tracer.itimer), the quiet reading adds them.
type itimers struct {
	mu sync.Mutex
	m  map[int]itimer // by thread group
}

// itimer is one process's: armed by alarm, it fires at due; armed by
// setitimer, whose value is in the server's memory (another thread can
// rewrite it once read), its time is unknown (bounded false) until an
// alarm(0) or the process's end disarms it.
type itimer struct {
	syscall string
	bounded bool
	due     time.Time
}

func newItimers() *itimers { return &itimers{m: map[int]itimer{}} }

func (it *itimers) set(tgid int, t itimer) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.m[tgid] = t
}

func (it *itimers) clear(tgid int) {
	it.mu.Lock()
	defer it.mu.Unlock()
	delete(it.m, tgid)
}

// itimerSlack is how long past its due time an alarm is still counted:
// the signal is delivered at due, and what it wakes shows in /proc by then.
const itimerSlack = 50 * time.Millisecond

// pending returns the armed timers as wakeups, dropping the alarms long
// past due.
func (it *itimers) pending(now time.Time) quiet.Wakeups {
	it.mu.Lock()
	defer it.mu.Unlock()
	var ws quiet.Wakeups
	for pid, t := range it.m {
		w := quiet.Wakeup{PID: pid, Reason: quiet.ITimer, Syscall: t.syscall}
		if t.bounded {
			if now.After(t.due.Add(itimerSlack)) {
				delete(it.m, pid)
				continue
			}
			w.Bounded, w.Within = true, max(t.due.Sub(now), 0)
		}
		ws = append(ws, w)
	}
	return ws
}

// answerQuiet takes a reading at each request, no sooner after the last
// one ended than QuietGap or quietDuty times what it took (a server can
// make a reading cost: 256 processes of 4,096 fds each are a million
// readlinks; it takes at most a fifth of the agent's time), and emits it,
// with a tick after it, until stop.
func answerQuiet(out *writer, req <-chan os.Signal, timers *itimers, stop <-chan struct{}) {
	var last time.Time
	var took time.Duration
	for {
		select {
		case <-req:
		case <-stop:
			return
		}
		if wait := max(QuietGap, quietDuty*took) - time.Since(last); wait > 0 {
			select {
			case <-time.After(wait):
			case <-stop:
				return
			}
		}
		began := time.Now()
		r := readQuiet(timers)
		last = time.Now()
		took = last.Sub(began)
		b, _ := json.Marshal(r)
		out.emit(&Event{Kind: KindQuiet, Data: string(b)})
		out.tick()
	}
}

// readQuiet reads the sandbox once (two passes, see quiet.Pending), the
// agent's own process left out.
func readQuiet(timers *itimers) QuietReading {
	r := QuietReading{Start: Now()}
	ws, err := quiet.Pending(quiet.Options{Self: []int{os.Getpid()}})
	if err != nil {
		r.Err = err.Error()
	}
	ws = append(ws, timers.pending(time.Now())...)
	if len(ws) > MaxQuietWakeups {
		r.More = len(ws) - MaxQuietWakeups
		ws = ws[:MaxQuietWakeups]
	}
	r.Wakeups = ws
	return r
}
