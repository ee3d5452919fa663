//go:build linux

package agent

import _ "unsafe" // for go:linkname

// Now is CLOCK_MONOTONIC in nanoseconds, the clock the agent stamps
// events with and the runner cuts phases by. It is the runtime's own
// reading, through the vDSO: a clock_gettime system call per event (and
// per poll of the tracer) cost a third of the agent's time on execs.
func Now() int64 { return nanotime() }

//go:linkname nanotime runtime.nanotime
func nanotime() int64
