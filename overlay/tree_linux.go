//go:build linux

package overlay

import (
	"context"

	"golang.org/x/sys/unix"
)

// Snapshot walks the tree once.
func (t *Tree) Snapshot(ctx context.Context) (Snapshot, error) {
	lim := t.Limits.withDefaults()
	snap := Snapshot{Entries: map[string]Entry{}}
	budget := t.MaxHashTotal
	if budget <= 0 {
		budget = TreeHashBudget
	}
	var root unix.Stat_t
	if err := unix.Stat(t.Root, &root); err != nil {
		return snap, err
	}
	err := walkBeneath(t.Root, func(n node) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		snap.Count++
		if snap.Count > lim.MaxEntries {
			snap.Truncated = true
			return errSkipAll
		}
		info := statInfo{name: n.rel, st: n.st}
		e := Entry{Kind: Added, Type: TypeOf(info.Mode()), Mode: info.Mode(), Size: info.Size(), ModTime: n.st.Mtim.Nano(),
			UID: int(n.st.Uid), GID: int(n.st.Gid), Ctime: n.st.Ctim.Nano()}
		switch e.Type {
		case Symlink:
			e.Link = n.link
		case File:
			snap.Bytes += e.Size
			switch {
			case e.Size > lim.MaxHashBytes:
			case e.Size > budget:
				snap.Truncated = true
			default:
				budget -= e.Size
				e.SHA256, _, _ = hashBeneath(t.Root, n.rel, lim.MaxHashBytes, -1)
			}
		}
		snap.Entries[t.At+n.rel] = e
		if e.Type == Dir && t.OneFS && n.st.Dev != root.Dev {
			return errSkipDir
		}
		return nil
	})
	return snap, err
}
