package sandbox

import (
	"context"
	"io"
	"time"
)

// StartCommand starts, in a sandbox set up as a server's (image, agent,
// network, limits, workspace and package), a command that is not an MCP
// server (an install, a build): nothing is sent to its stdin, its stdout
// is read and dropped. The start is bounded by opts.StartTimeout, apart
// from the command's own bound (a slow start on a loaded engine is not
// the command's time). It always returns the session, to Close, with the
// start's error if any; WaitCommand waits for the command's end.
func StartCommand(ctx context.Context, cli Engine, opts SessionOptions) (*Session, error) {
	s := newSession(cli, opts)
	startCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	if err := s.launch(ctx, startCtx); err != nil {
		return s, err
	}
	// Nothing reads the command's stdout but this: a command that writes
	// there must not block on a full pipe.
	go io.Copy(io.Discard, s.ctr.Stdout())
	return s, nil
}

// WaitCommand waits, up to d, for StartCommand's command to end: how it
// ended, and whether it did.
func (s *Session) WaitCommand(ctx context.Context, d time.Duration) (State, bool) {
	return s.ctr.Exited(ctx, d)
}

// CopyOut is the tree at path in the session's container, as the engine
// archives it (a stopped container's too, until Close removes it).
func (s *Session) CopyOut(ctx context.Context, path string) (io.ReadCloser, error) {
	rc, _, err := s.cli.CopyFromContainer(ctx, s.ctr.ID, path)
	return rc, err
}
