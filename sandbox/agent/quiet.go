package agent

import (
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent/internal/quiet"
)

// Wakeup is one thing in the sandbox that can still act (see
// QuietReading).
type Wakeup = quiet.Wakeup

// Reason says why a task can still act (see Wakeup).
type Reason = quiet.Reason

// The reasons of the timers a task holds, as against its own wait: their
// time is read anew at each reading.
const (
	ReasonTimerfd    = quiet.Timerfd
	ReasonPosixTimer = quiet.PosixTimer
	ReasonITimer     = quiet.ITimer
	// What a task that acts now reads as.
	ReasonRunning   = quiet.Running
	ReasonChanged   = quiet.Changed
	ReasonTransient = quiet.Transient
)

// QuietReading is the agent's answer to QuietSignal (a KindQuiet event's
// Data): what in the sandbox can still act without outside input, read
// from /proc without stopping anything, and the ITIMER_REAL timers the
// tracer saw armed. No wakeup and no error: nothing can act, and nothing
// will happen until the runner sends something.
type QuietReading struct {
	// Start is when the reading began (the events' clock): it answers
	// every request sent before it.
	Start   int64    `json:"start"`
	Wakeups []Wakeup `json:"wakeups,omitempty"`
	// More counts the wakeups past MaxQuietWakeups, not listed.
	More int `json:"more,omitempty"`
	// Err says why the reading could not be made (then not quiet).
	Err string `json:"err,omitempty"`
}

// Quiet reports whether the reading found nothing that can act.
func (r QuietReading) Quiet() bool { return r.Err == "" && len(r.Wakeups) == 0 && r.More == 0 }

// Bounds of the quiet readings. A reading costs the agent about a
// millisecond for an idle node server, three for 50 threads (the server
// shares the CPU): QuietGap bounds a flood of requests (the server can
// send QuietSignal too) to a few percent of a core. MaxQuietWakeups
// keeps a reading's frame small; the rest are counted.
const (
	QuietGap        = 20 * time.Millisecond
	MaxQuietWakeups = 32
)
