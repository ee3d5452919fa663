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
		s.mounts = append(s.mounts, mounted{m, &overlay.UpperDir{Upper: m.upperDir(), Lowers: m.lowers(), Limits: lim, Journal: openJournal(lim)}})
	}
	return s
}

// Snapshot reads the mounts first (the workspace, then the package), so
// that their files come first out of the hash budget they share with the
// container's root.
func (s *mountedSource) Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error) {
	rootOpts, mountOpts := s.split(opts)
	mountSnaps := make([]overlay.Snapshot, len(s.mounts))
	for i, m := range s.mounts {
		ms, err := m.upper.SnapshotWith(ctx, mountOpts[i])
		if err != nil {
			return ms, err
		}
		mountSnaps[i] = ms
	}
	snap, err := s.changeSource.Snapshot(ctx, rootOpts)
	if err != nil {
		return snap, err
	}
	unhashed := []string{}
	for _, p := range snap.Unhashed {
		if !s.underAMount(p) {
			unhashed = append(unhashed, p)
		}
	}
	for i, m := range s.mounts {
		target, ms := m.mount.target, mountSnaps[i]
		// What the container's own layer has at the target is hidden under
		// the mount: the server cannot reach it.
		for p := range snap.Entries {
			if _, ok := underTarget(p, target); ok {
				delete(snap.Entries, p)
			}
		}
		for p, e := range ms.Entries {
			snap.Entries[target+p] = e
		}
		for _, p := range ms.Unhashed {
			unhashed = append(unhashed, target+p)
		}
		// Under the target the mount's walk counts, elsewhere the root's.
		root, mount := snap.Reached, ms.Reached
		snap.Covers = func(p string) bool {
			if r, ok := underTarget(p, target); ok {
				return r == "" || mount(r)
			}
			return root(p)
		}
		snap.Count += ms.Count
		snap.Bytes += ms.Bytes
		snap.Truncated = snap.Truncated || ms.Truncated
		snap.PastDeadline = snap.PastDeadline || ms.PastDeadline
	}
	sort.Strings(unhashed)
	snap.Unhashed = unhashed
	return snap, nil
}

// split gives the root's options and each mount's, its own paths to
// verify (relative to its target) in each, one hash budget for all.
func (s *mountedSource) split(opts overlay.SnapshotOptions) (root overlay.SnapshotOptions, mounts []overlay.SnapshotOptions) {
	if opts.Budget == nil {
		budget := overlay.DefaultHashBudget
		if len(s.mounts) > 0 && s.mounts[0].upper.Limits.HashBudget > 0 {
			budget = int(s.mounts[0].upper.Limits.HashBudget)
		}
		opts.Budget = overlay.NewBudget(int64(budget), time.Time{})
	}
	root = opts
	root.Verify = map[string]bool{}
	for p := range opts.Verify {
		root.Verify[p] = true
	}
	for _, m := range s.mounts {
		mOpts := opts
		mOpts.Verify = map[string]bool{}
		for p := range opts.Verify {
			if r, ok := underTarget(p, m.mount.target); ok {
				mOpts.Verify[r] = true
				delete(root.Verify, p)
			}
		}
		mounts = append(mounts, mOpts)
	}
	return root, mounts
}

// underTarget is p relative to target, if it is at or below it.
func underTarget(p, target string) (string, bool) {
	r, ok := strings.CutPrefix(p, target)
	return r, ok && (r == "" || r[0] == '/')
}

// underAMount reports whether p is at or below a mount's target.
func (s *mountedSource) underAMount(p string) bool {
	for _, m := range s.mounts {
		if p == m.mount.target || strings.HasPrefix(p, m.mount.target+"/") {
			return true
		}
	}
	return false
}

func (s *mountedSource) Close(ctx context.Context) error {
	err := s.changeSource.Close(ctx)
	for _, m := range s.mounts {
		m.mount.close()
		err = errors.Join(err, m.upper.Journal.Close())
	}
	return err
}

// Update reads what changed as Snapshot does, each upper dir through its
// journal; ok only when every one could tell.
func (s *mountedSource) Update(ctx context.Context, opts overlay.SnapshotOptions) (prev, cur overlay.Snapshot, ok bool, err error) {
	root, can := s.changeSource.(updater)
	if !can {
		return prev, cur, false, nil
	}
	rootOpts, mountOpts := s.split(opts)
	prev, cur = overlay.Snapshot{Entries: map[string]overlay.Entry{}}, overlay.Snapshot{Entries: map[string]overlay.Entry{}}
	all := true
	for i, m := range s.mounts {
		mp, mc, ok, err := m.upper.Update(ctx, mountOpts[i])
		if err != nil || !ok {
			// The others are read by the snapshot that follows.
			all = false
			continue
		}
		target := m.mount.target
		for p, e := range mp.Entries {
			prev.Entries[target+p] = e
		}
		for p, e := range mc.Entries {
			cur.Entries[target+p] = e
		}
		for _, p := range mc.Unhashed {
			cur.Unhashed = append(cur.Unhashed, target+p)
		}
		cur.Count += mc.Count
		cur.Bytes += mc.Bytes
	}
	rp, rc, ok, err := root.Update(ctx, rootOpts)
	if err != nil || !ok || !all {
		return prev, cur, false, nil
	}
	for p, e := range rp.Entries {
		if !s.underAMount(p) {
			prev.Entries[p] = e
		}
	}
	for p, e := range rc.Entries {
		if !s.underAMount(p) {
			cur.Entries[p] = e
		}
	}
	for _, p := range rc.Unhashed {
		if !s.underAMount(p) {
			cur.Unhashed = append(cur.Unhashed, p)
		}
	}
	sort.Strings(cur.Unhashed)
	cur.Count += rc.Count
	cur.Bytes += rc.Bytes
	return prev, cur, true, nil
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
