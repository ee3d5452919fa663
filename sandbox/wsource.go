package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// mountedSource adds the changes made in copy-on-write mounts (each its
// own upper dir, under its target) to the container's, so that one
// snapshot holds them all and the same classifier reads them.
type mountedSource struct {
	changeSource // the container's root
	mounts       []mounted
}

type mounted struct {
	mount *overlayMount
	upper *overlay.UpperDir
}

func newMountedSource(root changeSource, ms []*overlayMount, lim overlay.Limits) *mountedSource {
	s := &mountedSource{changeSource: root}
	for _, m := range ms {
		s.mounts = append(s.mounts, mounted{m, &overlay.UpperDir{Upper: m.upperDir(), Lowers: m.lowers(), Limits: lim}})
	}
	return s
}

func (s *mountedSource) Snapshot(ctx context.Context) (overlay.Snapshot, error) {
	snap, err := s.changeSource.Snapshot(ctx)
	if err != nil {
		return snap, err
	}
	var errs []error
	for _, m := range s.mounts {
		target := m.mount.target
		// What the container's own layer has at the target is hidden under
		// the mount: the server cannot reach it.
		for p := range snap.Entries {
			if p == target || strings.HasPrefix(p, target+"/") {
				delete(snap.Entries, p)
			}
		}
		ms, err := m.upper.Snapshot(ctx)
		errs = append(errs, err)
		for p, e := range ms.Entries {
			snap.Entries[target+p] = e
		}
		// Under the target the mount's walk counts, elsewhere the root's.
		root, mount := snap.Reached, ms.Reached
		snap.Covers = func(p string) bool {
			if rel, ok := strings.CutPrefix(p, target); ok && (rel == "" || rel[0] == '/') {
				return rel == "" || mount(rel)
			}
			return root(p)
		}
		snap.Count += ms.Count
		snap.Bytes += ms.Bytes
		snap.Truncated = snap.Truncated || ms.Truncated
	}
	return snap, errors.Join(errs...)
}

func (s *mountedSource) Close(ctx context.Context) error {
	err := s.changeSource.Close(ctx)
	for _, m := range s.mounts {
		m.mount.close()
	}
	return err
}

// layerDir is the container's overlay2 layer directory (the parent of its
// upper dir), where the mount's state lives and dies with the container;
// "" when the changes are not read from an upper dir.
func layerDir(src changeSource) string {
	u, ok := src.(*upperSource)
	if !ok {
		return ""
	}
	return filepath.Dir(u.Upper)
}

// errNoLayerDir: the engine's storage gives no layer directory to keep the
// mount's state in (not overlay2, or read through the API).
var errNoLayerDir = errors.New("no overlay2 layer directory for the mounts' changes")
