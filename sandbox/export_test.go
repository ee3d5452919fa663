package sandbox

import (
	"context"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// SeccompProfile is the profile a sandbox runs under, for tests that run
// a reference container with the same hardening.
var SeccompProfile = seccompProfile

// AgentTicks sets the agent's heartbeat and whether the runner asks it for
// ticks, for a test that makes a mark depend on the one or the other.
func AgentTicks(o *ContainerOptions, tick time.Duration, flush bool) {
	o.tick, o.noFlush = tick, !flush
}

// Flushing says whether the runner asks the container's agent for ticks.
func (c *Container) Flushing() bool { return c.flusher != nil }

// SyncEvents waits as a mark does, bounded, and takes the events up to it.
func (c *Container) SyncEvents(ctx context.Context, bound time.Duration) []agent.Event {
	m := agent.Now()
	c.events.sync(ctx, m, bound)
	return c.events.take(m)
}
