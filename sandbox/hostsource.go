package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// hostSource adds to the container's changes what its hostView reads: the
// writable places outside the overlay (docs/effects.md "Writable places").
type hostSource struct {
	changeSource
	view *hostView // nil until the container has started, or if it cannot be read
	// viewed is what the view read last (nil: nothing yet), for Update.
	viewed map[string]overlay.Entry
}

func (h *hostSource) Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error) {
	snap, err := h.changeSource.Snapshot(ctx, opts)
	if h.view == nil {
		return snap, err
	}
	hs, herr := h.view.Snapshot(ctx, opts.Budget.Deadline())
	h.viewed = nil
	if !hs.Truncated && herr == nil {
		h.viewed = hs.Entries
	}
	if snap.Entries == nil {
		snap.Entries = map[string]overlay.Entry{}
	}
	for p, e := range hs.Entries {
		snap.Entries[p] = e
	}
	// The view answers for its paths whether it reached them, the
	// container's layers for the rest.
	root, view, owns := snap.Reached, hs.Reached, h.view.owns
	if hs.Truncated || snap.Truncated {
		snap.Covers = func(p string) bool {
			if owns(p) {
				return view(p)
			}
			return root(p)
		}
	}
	if len(hs.Unhashed) > 0 {
		snap.Unhashed = append(snap.Unhashed, hs.Unhashed...)
		sort.Strings(snap.Unhashed)
	}
	snap.Count += hs.Count
	snap.Bytes += hs.Bytes
	snap.Truncated = snap.Truncated || hs.Truncated
	snap.PastDeadline = snap.PastDeadline || hs.PastDeadline
	return snap, errors.Join(err, herr)
}

// Update reads what changed as Snapshot does: the container's layers
// through their journals, the view (small places, each a walk) whole;
// ok only when both could tell.
func (h *hostSource) Update(ctx context.Context, opts overlay.SnapshotOptions) (prev, cur overlay.Snapshot, ok bool, err error) {
	inner, can := h.changeSource.(updater)
	if !can || (h.view != nil && h.viewed == nil) {
		return prev, cur, false, nil
	}
	prev, cur, ok, err = inner.Update(ctx, opts)
	if err != nil || !ok || h.view == nil {
		return prev, cur, ok, err
	}
	hs, herr := h.view.Snapshot(ctx, opts.Budget.Deadline())
	if herr != nil || hs.Truncated {
		return prev, cur, false, nil
	}
	for p, e := range h.viewed {
		prev.Entries[p] = e
	}
	for p, e := range hs.Entries {
		cur.Entries[p] = e
	}
	h.viewed = hs.Entries
	if len(hs.Unhashed) > 0 {
		cur.Unhashed = append(cur.Unhashed, hs.Unhashed...)
		sort.Strings(cur.Unhashed)
	}
	cur.Count += hs.Count
	cur.Bytes += hs.Bytes
	return prev, cur, true, nil
}

func (h *hostSource) Close(ctx context.Context) error {
	err := h.changeSource.Close(ctx)
	if h.view != nil {
		h.view.close()
	}
	return err
}

// boundFiles are the files the engine binds from its own directory; they
// hold the container's id and addresses, so their hashes differ from run
// to run and are compared, never reported.
var boundFiles = []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}

func isBoundFile(p string) bool {
	for _, f := range boundFiles {
		if p == f {
			return true
		}
	}
	return false
}

// startsEmpty says whether a path of the view is in a place the engine
// makes empty for every container (/dev/shm, /dev/mqueue, a new IPC
// namespace): whatever is there at the first look is the server's, even
// if it ran before the view was opened (without the agent it does).
func startsEmpty(p string) bool {
	for _, d := range []string{overlay.ShmDir, overlay.MqueueDir, overlay.SysvIPCDir} {
		if within(p, d) {
			return true
		}
	}
	return false
}

// baseline adds the view's first snapshot to prev, the state every later
// snapshot is compared with; what starts empty stays empty in it.
func (h *hostSource) baseline(ctx context.Context, prev *overlay.Snapshot) error {
	if h.view == nil {
		return nil
	}
	base, err := h.view.Snapshot(ctx, time.Time{})
	if prev.Entries == nil {
		prev.Entries = map[string]overlay.Entry{}
	}
	for p, e := range base.Entries {
		if !startsEmpty(p) {
			prev.Entries[p] = e
		}
	}
	return err
}

// writableMounts lists the container paths of the engine's writable mounts
// (an image's VOLUME: an anonymous volume, which the overlay does not
// hold); the runner's own mounts are all read-only.
func writableMounts(ctx context.Context, cli Engine, id string) ([]string, error) {
	in, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("inspecting the started container: %v", err), Err: err}
	}
	var out []string
	for _, m := range in.Mounts {
		if m.RW {
			out = append(out, m.Destination)
		}
	}
	return out, nil
}

// within says whether p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
