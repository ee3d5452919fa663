//go:build linux

package agent

import (
	"time"

	"golang.org/x/sys/unix"
)

// FlushSignal asks the agent for a tick at once (see Config.Flush). The
// kernel drops it, unhandled, when sent to a namespace's init, so one that
// reaches an agent not yet listening (or without Flush) does nothing.
const FlushSignal = unix.SIGUSR1

// FlushGap is the least time between a tick and one a flush request
// asks for: it bounds the ticks a flood of requests makes (the server can
// send FlushSignal too), and delays a request by at most as much.
const FlushGap = time.Millisecond
