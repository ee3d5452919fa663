//go:build !linux

package agent

import "golang.org/x/sys/unix"

// Now is CLOCK_MONOTONIC in nanoseconds.
func Now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
