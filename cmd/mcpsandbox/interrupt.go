package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// interrupted is the cause of a run's context ended by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string {
	name := i.sig.String()
	if s, ok := i.sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGINT:
			name = "SIGINT"
		case syscall.SIGTERM:
			name = "SIGTERM"
		}
	}
	return "interrupted (" + name + ")"
}

// signalContext is ctx, cancelled with an interrupted cause at SIGINT or
// SIGTERM. SIGPIPE is ignored: a closed stdout or stderr makes writes fail
// (EPIPE), it does not kill the runner before it cleans up.
func signalContext(ctx context.Context) (context.Context, func()) {
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// leftoverTimeout bounds the look, after an interrupted run, for what it
// left.
const leftoverTimeout = 10 * time.Second

// finish maps the run's end to the exit code: a run a signal ended says
// so in one line, with what it left running (nothing, once its teardown
// ran), and no error text of the engine's; anything else as exitCode says.
func finish(ctx context.Context, err error, stderr io.Writer) int {
	var in interrupted
	if err == nil || !errors.As(context.Cause(ctx), &in) {
		return exitCode(err, stderr)
	}
	left, lerr := leftRunning(context.WithoutCancel(ctx))
	switch {
	case lerr != nil:
		fmt.Fprintf(stderr, "mcpsandbox: %s: could not check what is left (%s); 'mcpsandbox clean' removes it\n", in, lerr)
	case left > 0:
		fmt.Fprintf(stderr, "mcpsandbox: %s: %d container(s) left; 'mcpsandbox clean' removes them\n", in, left)
	default:
		fmt.Fprintf(stderr, "mcpsandbox: %s: nothing left running\n", in)
	}
	return 2
}

// leftRunning counts the containers this process made that are still
// there, kept ones aside.
func leftRunning(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, leftoverTimeout)
	defer cancel()
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return 0, errors.New("no engine")
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.Owner+"="+label.SelfOwner()))})
	if err != nil {
		return 0, errors.New("listing the containers failed")
	}
	n := 0
	for _, c := range list {
		if c.Labels[label.Keep] != "true" {
			n++
		}
	}
	return n, nil
}
