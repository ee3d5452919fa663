package sandbox

import (
	"context"
	"fmt"
)

// imageCommand makes the image's own entrypoint and command the server's
// argv, as `docker run IMAGE` would run them (the entrypoint, then the
// command; either may be empty), and the image's working directory the
// server's, when it has one: a command such as `node dist/index.js` is
// relative to it. The agent still runs as PID 1 and execs the argv; the
// user is the session's (the sandbox user unless told otherwise), never
// the image's USER. The image must be in the local engine.
func (s *Session) imageCommand(ctx context.Context) error {
	img, err := s.cli.ImageInspect(ctx, s.opts.Image)
	if err != nil {
		return imageError(s.opts.Image, err)
	}
	var argv []string
	if img.Config != nil {
		entry, cmd := img.Config.Entrypoint, img.Config.Cmd
		// A docker run line's: its --entrypoint replaces the image's
		// (and its command, as docker's does), its arguments the command.
		if s.opts.ImageEntrypoint != nil {
			entry, cmd = s.opts.ImageEntrypoint, nil
		}
		if s.opts.ImageArgs != nil {
			cmd = s.opts.ImageArgs
		}
		argv = append(append(argv, entry...), cmd...)
		s.workDir = img.Config.WorkingDir
	}
	if len(argv) == 0 {
		return &InfraError{Cause: fmt.Sprintf("image %s has no entrypoint and no command to run", s.opts.Image),
			Fix: "give the server command after --"}
	}
	s.logf("running the image's own command: %q", argv)
	s.opts.Argv = argv
	s.rep.Server.Command = append([]string{}, argv...)
	return nil
}
