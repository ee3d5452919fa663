package runs

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Named is a named run's record while its session runs, for `scan
// --name` and `run --name` alike: made before anything starts, with the
// workspace's baseline, so that a name taken is refused before a
// container exists; given the container once it runs (Started); completed
// once the container is kept and stopped (Kept), or forgotten when none
// was made (Forget).
type Named struct {
	store Store
	meta  Meta
	done  bool
}

// Begin records run name of the session so in store, state
// Running. The session must be opened with Keep set.
func Begin(store Store, name string, so sandbox.SessionOptions) (*Named, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	n := &Named{store: store, meta: Meta{Name: name, Command: so.Argv, Image: so.Image, Created: time.Now().UTC(), State: Running,
		Owner: label.SelfOwner()}}
	if so.State != nil {
		n.meta.StateName = so.State.StateName()
	}
	var base *overlay.Baseline
	ws := so.Workspace
	if ws == "" && so.PackageIsWorkspace {
		ws = so.Package // seen at its own path: the workspace all the same
	}
	if ws != "" {
		abs, err := filepath.Abs(ws)
		if err != nil {
			return nil, fmt.Errorf("run %s: the workspace: %w", name, err)
		}
		b, err := overlay.TakeBaseline(abs, overlay.BaselineOptions{})
		if err != nil {
			return nil, fmt.Errorf("run %s: the workspace's baseline: %w", name, err)
		}
		n.meta.Workspace, base = abs, &b
	}
	if err := store.Create(n.meta, base); err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	return n, nil
}

// Started records the running container, so that `runs` finds it (and
// its state) even if the runner is killed before the end.
func (n *Named) Started(s *sandbox.Session) error {
	n.meta.Container, n.meta.Upper = s.ContainerID(), s.WorkspaceUpper()
	return n.store.Update(n.meta)
}

// Kept completes the record with the kept, stopped container k and says
// so in one line, for the user (where the workspace was copied or seen at
// its own path rather than mounted, its changes cannot be applied, and the
// line says that too). A session that made no container (the image is
// missing, the engine refused it) has nothing to keep: its name is
// forgotten, and the line is "".
func (n *Named) Kept(k sandbox.KeptSession) (string, error) {
	n.done = true
	if k.Container == "" {
		return "", n.store.Forget(n.meta.Name)
	}
	n.meta.Container, n.meta.Upper, n.meta.Planted, n.meta.State = k.Container, k.WorkspaceUpper, k.Planted, Stopped
	n.meta.Owner = ""
	name := n.meta.Name
	msg := fmt.Sprintf("kept run %s ('mcpsandbox changes %s', 'apply %s', 'clean %s')", name, name, name, name)
	if n.meta.Workspace != "" && n.meta.Upper == "" {
		msg += "; its workspace was copied into the image, not mounted: its changes cannot be applied"
	}
	if err := n.store.Update(n.meta); err != nil {
		return "", fmt.Errorf("run %s: %w", name, err)
	}
	return msg, nil
}

// Name is the run's name.
func (n *Named) Name() string { return n.meta.Name }

// Forget drops the record unless Kept completed it: the session never
// kept a container (a scan that failed before one was made).
func (n *Named) Forget() error {
	if n.done {
		return nil
	}
	n.done = true
	return n.store.Forget(n.meta.Name)
}
