package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// TestReservedEnv: the agent's own marker among a server's variables (a
// configuration's env, a docker line's -e) is refused before anything
// starts: as PID 1 the agent would otherwise have been asked to take
// itself for its untraced child.
func TestReservedEnv(t *testing.T) {
	_, err := sandbox.Start(context.Background(), nil, sandbox.ContainerOptions{Image: "x", Argv: []string{"x"}, Env: []string{"A=1", agent.ChildEnv + "=1"}})
	if !errors.Is(err, sandbox.ErrReservedEnv) {
		t.Fatalf("%v, want ErrReservedEnv", err)
	}
}
