package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// agentMain is the binary run as the agent, /sbin/docker-init -- ARGV.
//
// Transitional, until agent.Main reads its config itself (branch
// agent-core): the runner sends agent.Config on stdin, never on the
// command line, and the agent on this branch still takes flags, so the
// frame is read here and handed to agent.Main as flags inside this
// process (/proc/1/cmdline stays "/sbin/docker-init -- ARGV"). At the
// merge, agentMain becomes agent.Main and this file goes.
func agentMain(args []string) int {
	if len(args) == 0 || args[0] != "--" {
		// The agent's own re-exec of itself (the traced child) and the old
		// flags go through unchanged.
		return agent.Main(args)
	}
	cfg, err := agent.ReadConfig(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", agent.Name, err)
		return 2
	}
	if cfg.Dir != "" {
		if err := os.Chdir(cfg.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", agent.Name, err)
			return 2
		}
	}
	flags := []string{"--network", cfg.Network}
	if cfg.MaxEvents > 0 {
		flags = append(flags, "--max-events", strconv.Itoa(cfg.MaxEvents))
	}
	if cfg.Tick > 0 {
		flags = append(flags, "--tick", cfg.Tick.String())
	}
	return agent.Main(append(flags, args...))
}
