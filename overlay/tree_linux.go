//go:build linux

package overlay

import (
	"context"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Snapshot walks the tree once. Past a bound it says which paths it
// reached (Covers): those walked before the entry bound stopped it, but
// for the files left unhashed by the byte budget, which are left out
// rather than reported with a hash they did not get.
func (t *Tree) Snapshot(ctx context.Context) (Snapshot, error) {
	return t.SnapshotUntil(ctx, time.Time{})
}

// SnapshotUntil is Snapshot, hashing nothing once deadline (zero: none)
// has passed: the files walked after it are listed Unhashed, as an
// UpperDir lists those past its budget, so that the run's --timeout
// bounds the walk's reading too.
func (t *Tree) SnapshotUntil(ctx context.Context, deadline time.Time) (Snapshot, error) {
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
	last, stopped, pathBytes := "", false, 0
	unhashed := map[string]bool{}
	err := walkBeneath(t.Root, func(n node) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		snap.Count++
		pathBytes += len(n.rel)
		late := snap.Count%deadlineEvery == 0 && Passed(deadline)
		if snap.Count > lim.MaxEntries || pathBytes > lim.MaxPathBytes || late {
			snap.Truncated, snap.PastDeadline, stopped = true, late, true
			if late {
				snap.Count--
			}
			return errSkipAll
		}
		last = n.rel
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
			case Passed(deadline):
				e.Unhashed = true
				snap.Unhashed = append(snap.Unhashed, t.At+n.rel)
			case e.Size > budget:
				snap.Truncated = true
				unhashed[t.At+n.rel] = true
				return nil
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
	sort.Strings(snap.Unhashed)
	if snap.Truncated {
		snap.Covers = func(p string) bool {
			rel, ok := strings.CutPrefix(p, t.At)
			if !ok || (rel != "" && rel[0] != '/') || unhashed[p] {
				return false
			}
			return !stopped || rel == "" || walkedBefore(nil, rel, last)
		}
	}
	return snap, err
}
