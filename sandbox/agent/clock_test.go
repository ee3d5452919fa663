//go:build linux

package agent

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNowIsClockMonotonic: the agent and the runner compare times from
// two processes, so Now must be CLOCK_MONOTONIC itself.
func TestNowIsClockMonotonic(t *testing.T) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	before := ts.Nano()
	now := Now()
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	if after := ts.Nano(); now < before || now > after {
		t.Fatalf("Now() = %d, not between two CLOCK_MONOTONIC readings %d and %d", now, before, after)
	}
}
