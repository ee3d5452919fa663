// Command mcpsandbox-agent is the in-container agent: mcpsandbox mounts it
// read-only into every sandbox and runs the server under it. Build it
// static (CGO_ENABLED=0).
package main

import (
	"os"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

func main() { os.Exit(agent.Main(os.Args[1:])) }
