package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/client"
)

// Connect returns a client of the local Docker engine (DOCKER_HOST and the
// other DOCKER_* variables are honoured), with the API version negotiated
// down to what the engine speaks, and checks that the engine answers.
func Connect(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("configuring the Docker client: %v", err), Fix: "check DOCKER_HOST and the other DOCKER_* variables"}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, &InfraError{
			Cause: fmt.Sprintf("no Docker engine answers at %s: %v", cli.DaemonHost(), err),
			Fix:   "start one with `sudo ci/docker-up.sh` (or point DOCKER_HOST at a running engine)",
		}
	}
	return cli, nil
}

// InfraError is a failure of the machinery around the server (Docker, the
// image, the container) rather than of the server itself. It names the cause
// and the fix, for a one-line message.
type InfraError struct {
	Cause string
	Fix   string
	Err   error
}

func (e *InfraError) Error() string {
	if e.Fix == "" {
		return e.Cause
	}
	return e.Cause + "; " + e.Fix
}

func (e *InfraError) Unwrap() error { return e.Err }
