package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// mountedSource adds the changes made in a copy-on-write mount (its own
// upper dir, under its target) to the container's, so that one snapshot
// holds both and the same classifier reads them.
type mountedSource struct {
	changeSource // the container's root
	mount        *overlayMount
	upper        *overlay.UpperDir
}

func newMountedSource(root changeSource, m *overlayMount, lim overlay.Limits) *mountedSource {
	return &mountedSource{changeSource: root, mount: m, upper: &overlay.UpperDir{Upper: m.upperDir(), Lowers: m.lowers(), Limits: lim}}
}

// Snapshot reads the mount first, so that the workspace's files come
// first out of the hash budget the two share.
func (s *mountedSource) Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error) {
	if opts.Budget == nil {
		opts.Budget = overlay.NewBudget(s.upper.Limits.HashBudget, time.Time{})
		if s.upper.Limits.HashBudget <= 0 {
			opts.Budget = overlay.NewBudget(overlay.DefaultHashBudget, time.Time{})
		}
	}
	under := func(p string) bool { return p == s.mount.target || strings.HasPrefix(p, s.mount.target+"/") }
	wsOpts, rootOpts := opts, opts
	wsOpts.Verify, rootOpts.Verify = map[string]bool{}, map[string]bool{}
	for p := range opts.Verify {
		if under(p) {
			wsOpts.Verify[strings.TrimPrefix(p, s.mount.target)] = true
		} else {
			rootOpts.Verify[p] = true
		}
	}
	ws, err := s.upper.SnapshotWith(ctx, wsOpts)
	if err != nil {
		return ws, err
	}
	snap, err := s.changeSource.Snapshot(ctx, rootOpts)
	if err != nil {
		return snap, err
	}
	// What the container's own layer has at the target is hidden under
	// the mount: the server cannot reach it.
	for p := range snap.Entries {
		if under(p) {
			delete(snap.Entries, p)
		}
	}
	unhashed := []string{}
	for _, p := range snap.Unhashed {
		if !under(p) {
			unhashed = append(unhashed, p)
		}
	}
	for p, e := range ws.Entries {
		snap.Entries[s.mount.target+p] = e
	}
	for _, p := range ws.Unhashed {
		unhashed = append(unhashed, s.mount.target+p)
	}
	sort.Strings(unhashed)
	snap.Unhashed = unhashed
	snap.Count += ws.Count
	snap.Bytes += ws.Bytes
	snap.Truncated = snap.Truncated || ws.Truncated
	return snap, nil
}

func (s *mountedSource) Close(ctx context.Context) error {
	err := s.changeSource.Close(ctx)
	s.mount.close()
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
var errNoLayerDir = errors.New("no overlay2 layer directory for the workspace's changes")
