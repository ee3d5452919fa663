package overlay

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxUpdateDirsRemoved bounds the directories one Update removes (each
// costs a pass over the state): past it a walk is cheaper.
const maxUpdateDirsRemoved = 64

// watchRoot watches the upper dir itself.
func (u *UpperDir) watchRoot() error {
	fd, err := unix.Open(u.Upper, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", u.Upper, err)
	}
	defer unix.Close(fd)
	u.Journal.watch(fd, "")
	return nil
}

// Update reads what changed since the last snapshot, as the journal tells
// it, and returns those paths' entries before (prev) and now (cur), their
// directories' with them, for Delta: the changes it gives are the ones a
// walk's snapshot would. ok is false when it cannot tell (no journal, the
// journal lost track, no untruncated snapshot to start from, every file
// to verify): the caller then takes a snapshot (SnapshotWith), which
// starts the journal again.
func (u *UpperDir) Update(ctx context.Context, opts SnapshotOptions) (prev, cur Snapshot, ok bool, err error) {
	if u.Journal == nil || u.live == nil || opts.VerifyAll {
		return prev, cur, false, nil
	}
	dirty, full := u.Journal.take()
	if full {
		u.live = nil
		return prev, cur, false, nil
	}
	lim := u.Limits.withDefaults()
	budget := opts.Budget
	if budget == nil {
		budget = NewBudget(lim.HashBudget, time.Time{})
	}
	w := &updater{u: u, lim: lim, budget: budget, force: opts.Verify, old: map[string]*Entry{}, done: map[string]bool{}, root: -1, dirFD: -1}
	defer w.close()
	// Held files, and what a snapshot could not hash, are read again as a
	// walk would (dirty with no event: never a name that vanished).
	for p := range opts.Verify {
		if _, ok := dirty[p]; !ok {
			dirty[p] = dirtyNamed
		}
	}
	for p := range u.live.unhashed {
		if _, ok := dirty[p]; !ok {
			dirty[p] = dirtyNamed
		}
	}
	w.dirty = dirty
	paths := make([]string, 0, len(dirty))
	for p := range dirty {
		paths = append(paths, p)
	}
	// In the walk's order, so that the hash budget runs out where a
	// walk's would (the workspace first, a flood in /tmp last).
	first := lim.First
	slices.SortFunc(paths, func(a, b string) int { return walkOrder(first, a, b) })
	fail := func(err error) (Snapshot, Snapshot, bool, error) {
		u.live = nil
		if errors.Is(err, errTooMuch) || errors.Is(err, errWalkNeeded) {
			return Snapshot{}, Snapshot{}, false, nil
		}
		return Snapshot{}, Snapshot{}, false, err
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		if err := w.path(p, dirty[p]&dirtyTree != 0); err != nil {
			return fail(err)
		}
	}
	// The other names of a file written through one, or of one a name of
	// which came or went (its ctime moved).
	for i := 0; i < len(w.linked); i++ {
		for _, q := range u.live.links[w.linked[i].ino] {
			if !w.done[q] {
				if err := w.path(q, false); err != nil {
					return fail(err)
				}
			}
		}
	}
	// A name of a linked file the state does not know is found by a walk.
	for _, l := range w.linked {
		if l.nlink > 0 && uint64(len(u.live.links[l.ino])) < l.nlink {
			return fail(errWalkNeeded)
		}
	}
	if len(u.live.entries) > lim.MaxEntries || u.live.pathBytes > lim.MaxPathBytes {
		// Past a bound: the walk tells what it reached, and says so.
		u.live = nil
		return prev, cur, false, nil
	}
	prev, cur = Snapshot{Entries: map[string]Entry{}}, Snapshot{Entries: map[string]Entry{}}
	for p, o := range w.old {
		if o != nil {
			prev.Entries[p] = *o
		}
		if e, ok := u.live.entries[p]; ok {
			cur.Entries[p] = e
		}
	}
	// A path's directory, for Delta to tell a file gone with it.
	for p := range w.old {
		if d := path.Dir(p); d != "/" {
			if _, touched := w.old[d]; !touched {
				if e, ok := u.live.entries[d]; ok {
					prev.Entries[d], cur.Entries[d] = e, e
				}
			}
		}
	}
	for p, e := range cur.Entries {
		if e.Unhashed {
			cur.Unhashed = append(cur.Unhashed, p)
		}
	}
	slices.Sort(cur.Unhashed)
	cur.Count, cur.Bytes = len(u.live.entries), u.live.bytes
	for p := range w.old {
		if _, ok := u.live.entries[p]; !ok {
			u.forget(p)
		}
	}
	return prev, cur, true, nil
}

// errTooMuch: the changes cost more than a walk.
var errTooMuch = errors.New("more changes than a walk costs")

// errWalkNeeded: a change is somewhere the journal cannot name (a file
// written through a name removed since, a hard link the state does not
// know).
var errWalkNeeded = errors.New("a change only a walk finds")

// walkOrder compares two paths as walkFirst meets them: the subtrees of
// first in their order, then the rest, component by component.
func walkOrder(first []string, a, b string) int {
	rank := func(p string) int {
		for i, f := range first {
			if p == f || strings.HasPrefix(p, f+"/") || strings.HasPrefix(f, p+"/") {
				return i
			}
		}
		return len(first)
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
}

// updater reads the paths of one Update.
type updater struct {
	u      *UpperDir
	lim    Limits
	budget *Budget
	force  map[string]bool
	// old is each path's entry before (nil: none), for the paths read.
	old         map[string]*Entry
	done        map[string]bool
	dirsRemoved int
	linked      []linkedFile
	// dirty is what the journal said of each path.
	dirty map[string]uint8
	// root and the directory last opened (at dirAt), for stat.
	root, dirFD int
	dirAt       string
}

type linkedFile struct {
	ino  uint64
	path string
	// nlink is the inode's link count as read (0: a name of it went).
	nlink uint64
}

// keep notes p's entry before it is changed, once.
func (w *updater) keep(p string) {
	if _, ok := w.old[p]; ok {
		return
	}
	if e, ok := w.u.live.entries[p]; ok {
		w.old[p] = &e
	} else {
		w.old[p] = nil
	}
}

func (w *updater) set(p string, e Entry) {
	w.keep(p)
	live := w.u.live
	if o, ok := live.entries[p]; ok {
		if o.Type == File && o.Kind != Removed {
			live.bytes -= o.Size
		}
	} else {
		live.pathBytes += len(p)
	}
	if e.Type == File && e.Kind != Removed {
		live.bytes += e.Size
	}
	live.entries[p] = e
	if e.Unhashed {
		live.unhashed[p] = true
	} else {
		delete(live.unhashed, p)
	}
}

func (w *updater) unset(p string) {
	w.keep(p)
	live := w.u.live
	if ino, ok := live.inoOf[p]; ok {
		// A name of a linked file gone: the others' ctime moved.
		delete(live.inoOf, p)
		live.links[ino] = slices.DeleteFunc(live.links[ino], func(q string) bool { return q == p })
		w.linked = append(w.linked, linkedFile{ino: ino, path: p})
	}
	if o, ok := live.entries[p]; ok {
		if o.Type == File && o.Kind != Removed {
			live.bytes -= o.Size
		}
		live.pathBytes -= len(p)
		delete(live.entries, p)
		delete(live.unhashed, p)
	}
}

// removeBelow removes what the state holds below the directory p.
func (w *updater) removeBelow(p string) error {
	w.dirsRemoved++
	if w.dirsRemoved > maxUpdateDirsRemoved {
		return errTooMuch
	}
	prefix := p + "/"
	for q := range w.u.live.entries {
		if strings.HasPrefix(q, prefix) {
			w.unset(q)
		}
	}
	return nil
}

// hidden says whether p is below an opaque directory of the upper dir.
func (w *updater) hidden(p string) bool {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if e, ok := w.u.live.entries[d]; ok && e.Opaque {
			return true
		}
	}
	return false
}

// path reads p again (tree: and all below it, a directory made or moved
// there).
func (w *updater) path(p string, tree bool) error {
	if p == "/" || p == "" || w.done[p] {
		return nil
	}
	w.done[p] = true
	old, had := w.u.live.entries[p]
	n, child, ok, err := w.stat(p)
	if err != nil {
		return err
	}
	if !ok {
		if w.dirty[p]&dirtyNamed == 0 {
			return errWalkNeeded // written through a name that is gone
		}
		w.unset(p)
		if had && old.Type == Dir {
			return w.removeBelow(p)
		}
		return nil
	}
	if child >= 0 {
		defer func() {
			if child >= 0 {
				unix.Close(child)
			}
		}()
	}
	e := w.u.entryOf(n, p, w.hidden(p), w.lim, w.force[p], w.budget)
	rewalk := child >= 0 && (tree || !had || old.Type != Dir || old.Kind == Removed || old.Opaque != e.Opaque)
	if had && old.Type == Dir && (child < 0 || rewalk) {
		if err := w.removeBelow(p); err != nil {
			return err
		}
	}
	w.set(p, e)
	if e.Type != Dir && e.Kind != Removed && n.st.Nlink > 1 {
		w.link(n.st.Ino, p, n.st.Nlink)
	}
	if !rewalk {
		return nil
	}
	w.u.Journal.watch(child, p)
	fd := child
	child = -1 // walkFD closes it
	return walkFD(fd, p, func(n node) error {
		if w.done[n.rel] {
			return nil
		}
		w.done[n.rel] = true
		if n.fd > 0 {
			w.u.Journal.watch(n.fd, n.rel)
		}
		e := w.u.entryOf(n, n.rel, w.hidden(n.rel), w.lim, w.force[n.rel], w.budget)
		w.set(n.rel, e)
		if e.Type != Dir && e.Kind != Removed && n.st.Nlink > 1 {
			w.link(n.st.Ino, n.rel, n.st.Nlink)
		}
		return nil
	})
}

// link notes p as a name of the multiply-linked inode ino (nlink links).
func (w *updater) link(ino uint64, p string, nlink uint64) {
	live := w.u.live
	if old, ok := live.inoOf[p]; ok && old != ino {
		live.links[old] = slices.DeleteFunc(live.links[old], func(q string) bool { return q == p })
	}
	if names := live.links[ino]; !slices.Contains(names, p) {
		live.links[ino] = append(names, p)
	}
	live.inoOf[p] = ino
	w.linked = append(w.linked, linkedFile{ino: ino, path: p, nlink: nlink})
}

// stat meets p as a walk would: ok false when it is not there (or a
// directory on its way is not one). The paths come sorted, so the
// directory last opened is kept for the next.
func (w *updater) stat(p string) (n node, child int, ok bool, err error) {
	if w.root < 0 {
		w.root, err = unix.Open(w.u.Upper, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return n, -1, false, fmt.Errorf("opening %s: %w", w.u.Upper, err)
		}
	}
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	pfd := w.root
	if dir != "" {
		if w.dirFD < 0 || w.dirAt != dir {
			w.closeDir()
			fd, err := openBeneath(w.root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
			if err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
					return n, -1, false, nil // its directory is gone or no longer one: told there
				}
				return n, -1, false, fmt.Errorf("opening %s: %w", dir, err)
			}
			w.dirFD, w.dirAt = fd, dir
		}
		pfd = w.dirFD
	}
	return meet(pfd, dir, name)
}

func (w *updater) closeDir() {
	if w.dirFD >= 0 {
		unix.Close(w.dirFD)
	}
	w.dirFD, w.dirAt = -1, ""
}

// close releases what stat kept open.
func (w *updater) close() {
	w.closeDir()
	if w.root >= 0 {
		unix.Close(w.root)
	}
	w.root = -1
}
