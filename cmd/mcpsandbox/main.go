package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/twin"
)

func main() {
	if filepath.Base(os.Args[0]) == agent.Name {
		// `mcpsandbox client`'s twin server and its stdio relay: the agent's
		// binary, under a hidden first argument (the agent's own is "--").
		if len(os.Args) > 1 && twin.Is(os.Args[1]) {
			os.Exit(twin.Main(os.Args[1:]))
		}
		os.Exit(agent.Main(os.Args[1:]))
	}
	limitMemory(os.Getenv)
	ctx, stop := signalContext(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := finish(ctx, err, os.Stderr)
	stop()
	os.Exit(code)
}
