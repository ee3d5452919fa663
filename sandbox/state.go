package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// ServerState is where a server's own files outside the workspace carry
// over from one session to the next (--state): put into the container
// before it starts, saved from its upper layer at teardown. The session
// holds only this; the run store's StateDir is the one there is.
type ServerState interface {
	// StateName names the state in problems and records.
	StateName() string
	// Restore gives the state's files as a tar of the container's root
	// (empty: a new state) and makes owner its saver, if none is yet:
	// every session of one run (a scan's replays too) starts from the
	// state as it was when the first one did, and only that first one
	// saves.
	Restore(owner any) ([]byte, error)
	// Save replaces the state with what the upper dir holds outside the
	// places in skip, when owner is its saver (saved false otherwise; an
	// upper of "" is ErrNoUpper).
	Save(owner any, upper string, skip []string) (info StateInfo, saved bool, err error)
}

// ErrNoUpper: the container's changes are read through the API, not from
// an upper dir a state could be saved from.
var ErrNoUpper = errors.New("no upper dir")

// StateInfo is what a state's last save kept.
type StateInfo struct {
	Saved   time.Time `json:"saved"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
	Skipped []string  `json:"skipped,omitempty"`
}

// restoreState puts the session's state's files into container id before
// it starts.
func (s *Session) restoreState(ctx context.Context, id string) error {
	data, err := s.opts.State.Restore(s)
	if err != nil || len(data) == 0 {
		return err // or a new state
	}
	if err := s.cli.CopyToContainer(ctx, id, "/", bytes.NewReader(data), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("restoring state %s: %w", s.opts.State.StateName(), err)
	}
	return nil
}

// stateSkip are the places a state never keeps: the host directories'
// targets (the workspace, the package) and the mounts.
func (s *Session) stateSkip() []string {
	// The agent is PID 1 of the next run: a server running as root that
	// replaced it must not have its program there. The engine's files are
	// the engine's.
	skip := []string{s.opts.packageTarget(), overlay.Workspace, agent.Path, "/etc/hosts", "/etc/resolv.conf", "/etc/hostname"}
	for _, m := range s.opts.Mounts {
		skip = append(skip, path.Clean(m.Target))
	}
	// The planted files are the next run's to plant, never the state's.
	for _, f := range s.opts.Seeds {
		skip = append(skip, path.Clean(f.Path))
	}
	out := skip[:0]
	for _, p := range skip {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// saveState saves the server's state at teardown, once the server is
// stopped and before the container goes: a problem says what it could
// not keep.
func (s *Session) saveState() {
	sd := s.opts.State
	if sd == nil {
		return
	}
	upper := ""
	if s.layer != "" {
		upper = filepath.Join(s.layer, "diff")
	}
	name := sd.StateName()
	info, saved, err := sd.Save(s, upper, s.stateSkip())
	switch {
	case errors.Is(err, ErrNoUpper):
		s.Problem("state", 0, "state %s not saved: the container's changes are read through the API, not from its upper dir", name)
		return
	case err != nil:
		s.Problem("state", 0, "state %s not saved (the last save is kept): %s", name, report.OneLine(err.Error()))
		return
	case !saved:
		return
	}
	if len(info.Skipped) > 0 {
		s.Problem("state", 0, "state %s: %d path(s) not kept (deletions of the image's files, devices, fifos, sockets): %s",
			name, len(info.Skipped), strings.Join(info.Skipped[:min(len(info.Skipped), maxHostEdits)], ", "))
	}
	s.logf("saved state %s: %d file(s), %d byte(s)", name, info.Files, info.Bytes)
}
