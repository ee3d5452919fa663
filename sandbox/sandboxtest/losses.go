package sandboxtest

import (
	"context"
	"fmt"
	"syscall"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// Loss is one way a sandbox is lost from outside, as another user of the
// engine or of the host would lose it, and what its problem then says.
type Loss struct {
	Name string
	Do   func(ctx context.Context, id string) error
	Want string
}

// Losses are the losses every driver's test goes through: the container
// removed through the engine, and its init killed from the host, which
// no engine event tells.
func Losses(cli *client.Client) []Loss {
	return []Loss{
		{"removed", func(ctx context.Context, id string) error {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}, "from outside"},
		{"init killed from the host", func(ctx context.Context, id string) error { return KillInit(ctx, cli, id) }, "init was killed from outside"},
	}
}

// KillInit sends SIGKILL from the host to container id's PID 1 (the
// tests run as root): no engine event says so.
func KillInit(ctx context.Context, cli *client.Client, id string) error {
	in, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		return err
	}
	if in.State == nil || in.State.Pid == 0 {
		return fmt.Errorf("container %.12s has no PID 1 on the host", id)
	}
	return syscall.Kill(in.State.Pid, syscall.SIGKILL)
}
