package sandbox

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// changeSource takes cumulative snapshots of a container's changes,
// hashing again the files opts names whatever their stat says.
type changeSource interface {
	Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error)
	Close(ctx context.Context) error
}

// newChangeSource picks how to read the container's changes: its upper dir
// when the engine is local and the dir readable (cost in proportion to what
// changed, no API calls), else the API (remote engines, rootless, Docker
// Desktop).
func newChangeSource(ctx context.Context, cli Engine, id, image string, mode ChangesMode, runID string, lim overlay.Limits) (changeSource, ChangesMode, error) {
	if mode == 0 {
		mode = ChangesAuto
	}
	if mode != ChangesAPI {
		in, err := cli.ContainerInspect(ctx, id)
		if err != nil {
			return nil, 0, fmt.Errorf("inspecting container %.12s: %w", id, err)
		}
		upper, lower := in.GraphDriver.Data["UpperDir"], in.GraphDriver.Data["LowerDir"]
		fi, err := os.Stat(upper)
		switch {
		case in.GraphDriver.Name == "overlay2" && upper != "" && err == nil && fi.IsDir():
			var lowers []string
			if lower != "" {
				lowers = strings.Split(lower, ":")
			}
			return &upperSource{overlay.UpperDir{Upper: upper, Lowers: lowers, Limits: lim, Journal: openJournal(lim)}}, ChangesUpperDir, nil
		case mode == ChangesUpperDir:
			return nil, 0, &InfraError{Cause: fmt.Sprintf("the container's upper dir is not readable here (driver %s, upper %q: %v)", in.GraphDriver.Name, upper, err),
				Fix: "run as root next to a local overlay2 engine, or use --changes api"}
		}
	}
	src, err := newAPISource(ctx, cli, id, image, runID, lim)
	if err != nil {
		return nil, 0, err
	}
	return src, ChangesAPI, nil
}

type upperSource struct{ overlay.UpperDir }

func (u *upperSource) Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error) {
	return u.UpperDir.SnapshotWith(ctx, opts)
}

func (u *upperSource) Close(context.Context) error { return u.Journal.Close() }

// updater is a source that can read only what changed since its last
// snapshot (overlay.UpperDir.Update: the paths changed and their
// directories, before and now); ok false: take a snapshot.
type updater interface {
	Update(ctx context.Context, opts overlay.SnapshotOptions) (prev, cur overlay.Snapshot, ok bool, err error)
}

// openJournal opens a change journal for an upper dir, or none (nil: each
// snapshot walks, as it would without one).
func openJournal(lim overlay.Limits) *overlay.Journal {
	j, err := overlay.OpenJournal(lim.JournalDirs)
	if err != nil {
		return nil
	}
	return j
}

// apiSource reads changes through the Engine API: ContainerDiff for the
// list, stat and archive calls for metadata and content, and a reference
// container of the same image, never started, for the state before.
type apiSource struct {
	cli    Engine
	id     string
	ref    string
	lim    overlay.Limits
	before map[string]*overlay.Entry
	hashes map[string]apiHash
}

type apiHash struct {
	size, mtime int64
	sum         string
}

func newAPISource(ctx context.Context, cli Engine, id, image, runID string, lim overlay.Limits) (*apiSource, error) {
	cctx, cancel := createContext(ctx)
	defer cancel()
	created, err := cli.ContainerCreate(cctx, &container.Config{Image: image, Entrypoint: []string{}, Cmd: []string{"/bin/true"},
		Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: "reference"})},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return nil, fmt.Errorf("creating the reference container: %w", err)
	}
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = 20_000 // each entry costs a stat call per snapshot
	}
	if lim.MaxHashBytes <= 0 {
		lim.MaxHashBytes = 16 << 20
	}
	if lim.HashBudget <= 0 {
		lim.HashBudget = overlay.DefaultHashBudget
	}
	return &apiSource{cli: cli, id: id, ref: created.ID, lim: lim, before: map[string]*overlay.Entry{}, hashes: map[string]apiHash{}}, nil
}

func (a *apiSource) Close(ctx context.Context) error {
	return RemoveContainer(context.WithoutCancel(ctx), a.cli, a.ref)
}

// Snapshot reads the changes through the API. It cannot see which files
// the container's processes hold (mapped shared, open for writing), and
// the API gives no ctime: a file's hash is kept while its size and mtime
// are unchanged (the session says so in a problem). What is hashed comes
// out of the budget.
func (a *apiSource) Snapshot(ctx context.Context, opts overlay.SnapshotOptions) (overlay.Snapshot, error) {
	budget := opts.Budget
	if budget == nil {
		budget = overlay.NewBudget(a.lim.HashBudget, time.Time{})
	}
	changes, err := a.cli.ContainerDiff(ctx, a.id)
	if err != nil {
		return overlay.Snapshot{}, fmt.Errorf("listing changes of container %.12s: %w", a.id, err)
	}
	// In path order, so that the same changes spend the budget the same way.
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	snap := overlay.Snapshot{Entries: map[string]overlay.Entry{}}
	for _, c := range changes {
		snap.Count++
		if snap.Count > a.lim.MaxEntries {
			snap.Truncated = true
			break
		}
		var e overlay.Entry
		switch c.Kind {
		case container.ChangeDelete:
			e = overlay.Entry{Kind: overlay.Removed, Type: overlay.Other, Before: a.lookupBefore(ctx, c.Path)}
			if e.Before != nil {
				e.Type = e.Before.Type
			}
		default:
			st, err := a.cli.ContainerStatPath(ctx, a.id, c.Path)
			switch {
			case err == nil:
				e = entryOfStat(st)
			case cerrdefs.IsNotFound(err):
				// Gone since the list was made, or a name the engine's JSON
				// mangled (invalid UTF-8 becomes U+FFFD): kept, never dropped.
				e = overlay.Entry{Type: overlay.Other}
			default:
				return snap, fmt.Errorf("stat %s in container %.12s: %w", c.Path, a.id, err)
			}
			e.Kind = overlay.Added
			if c.Kind == container.ChangeModify {
				if e.Before = a.lookupBefore(ctx, c.Path); e.Before != nil {
					e.Kind = overlay.Changed
				}
			}
			if e.Type == overlay.File {
				snap.Bytes += e.Size
				e.SHA256, e.Unhashed = a.hashCached(ctx, c.Path, e, budget)
				if e.Unhashed {
					snap.Unhashed = append(snap.Unhashed, c.Path)
				}
			}
		}
		snap.Entries[c.Path] = e
	}
	sort.Strings(snap.Unhashed)
	return snap, nil
}

func entryOfStat(st container.PathStat) overlay.Entry {
	e := overlay.Entry{Type: overlay.TypeOf(st.Mode), Mode: st.Mode, Size: st.Size, ModTime: st.Mtime.UnixNano()}
	if e.Type == overlay.Symlink {
		e.Link = st.LinkTarget
	}
	return e
}

// lookupBefore stats a path in the reference container: the image's state.
func (a *apiSource) lookupBefore(ctx context.Context, p string) *overlay.Entry {
	if e, ok := a.before[p]; ok {
		return e
	}
	var e *overlay.Entry
	if st, err := a.cli.ContainerStatPath(ctx, a.ref, p); err == nil {
		v := entryOfStat(st)
		if v.Type == overlay.File {
			v.SHA256 = a.hash(ctx, a.ref, p, v)
		}
		e = &v
	}
	a.before[p] = e
	return e
}

// hashCached hashes a changed file of the container, reusing the last
// hash while size and mtime are unchanged; what it reads comes out of the
// budget, and a file it cannot cover is returned unhashed.
func (a *apiSource) hashCached(ctx context.Context, p string, e overlay.Entry, budget *overlay.Budget) (string, bool) {
	if e.Size > a.lim.MaxHashBytes {
		return "", false
	}
	if h, ok := a.hashes[p]; ok && h.size == e.Size && h.mtime == e.ModTime {
		return h.sum, false
	}
	if !budget.Take(e.Size) {
		return "", true
	}
	sum := a.hash(ctx, a.id, p, e)
	a.hashes[p] = apiHash{size: e.Size, mtime: e.ModTime, sum: sum}
	return sum, false
}

// hash reads a regular file through the archive API and hashes it, within
// the size bound; the engine resolves the path inside the container, never
// on the host.
func (a *apiSource) hash(ctx context.Context, id, p string, e overlay.Entry) string {
	if e.Size > a.lim.MaxHashBytes {
		return ""
	}
	rc, _, err := a.cli.CopyFromContainer(ctx, id, p)
	if err != nil {
		return ""
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil || hdr.Typeflag != tar.TypeReg {
		return ""
	}
	h := sha256.New()
	if _, err := io.CopyN(h, tr, a.lim.MaxHashBytes+1); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// recorder turns successive snapshots into each phase's file effects.
type recorder struct {
	src       changeSource
	pn        *procNet // nil without the agent
	prev      overlay.Snapshot
	maxListed int
	// ignore holds paths the runtime creates, not the server: mount points
	// and the directories made for them.
	ignore map[string]bool
	// held finds the files the container's processes hold (nil before the
	// container runs, and with the API source, which cannot look);
	// heldBroken says it could not be set up, so every file is verified. carried is what was held around the last
	// snapshot: what a process wrote through it since, and released,
	// changed no stat either.
	held       *heldFiles
	heldBroken bool
	carried    held
	// hashBudget is the bytes each snapshot may hash.
	hashBudget int64
	// patched says the last mark read the journals' changes, not a walk.
	patched bool
	// walkSpan times a walk of the layers (nil: untimed).
	walkSpan func() func()
}

// lookHeld finds the held files now.
func (r *recorder) lookHeld() (held, error) {
	switch {
	case r.heldBroken:
		return held{unplaced: true}, nil
	case r.held == nil:
		return held{}, nil
	}
	return r.held.look()
}

// snapshot takes a snapshot that compares by content every file held
// now or around the last snapshot, within a budget that ends at deadline
// (zero: none), and looks again after it: a file mapped while the walk
// ran is verified next time. heldErr, finding the held files, leaves the
// snapshot good: every file was verified.
func (r *recorder) read(ctx context.Context, deadline time.Time, walk bool) (prev, cur overlay.Snapshot, patch bool, err, heldErr error) {
	before, err1 := r.lookHeld()
	v := before.union(r.carried)
	opts := overlay.SnapshotOptions{Verify: v.paths, VerifyAll: v.unplaced, Budget: overlay.NewBudget(r.hashBudget, deadline)}
	if u, ok := r.src.(updater); ok && !walk && r.prev.Entries != nil && !r.prev.Truncated {
		var uerr error
		prev, cur, patch, uerr = u.Update(ctx, opts)
		if uerr != nil || !patch {
			// The walk reads it all, and tells its own trouble.
			patch, opts.Budget = false, overlay.NewBudget(r.hashBudget, deadline)
		}
	}
	if !patch {
		if r.walkSpan != nil {
			defer r.walkSpan()()
		}
		prev = r.prev
		cur, err = r.src.Snapshot(ctx, opts)
	}
	r.patched = patch
	after, err2 := r.lookHeld()
	r.carried = before.union(after)
	if err1 != nil || err2 != nil {
		heldErr = fmt.Errorf("finding the files the container's processes hold (every file was compared by content): %w", errors.Join(err1, err2))
	}
	return prev, cur, patch, err, heldErr
}

// mountPoints returns the targets of mounts and their parent directories.
func mountPoints(mounts []Mount) map[string]bool {
	m := map[string]bool{}
	for _, mt := range mounts {
		for p := path.Clean(mt.Target); p != "/"; p = path.Dir(p) {
			m[p] = true
		}
	}
	return m
}

// mark snapshots now and returns the effects since the last mark, with
// the files whose content the hash budget did not cover (deadline, if
// not zero, ends the budget); call says whether the stretch was a tool
// call.
func (r *recorder) mark(ctx context.Context, call bool, deadline time.Time) (report.Effects, []string, error) {
	eff := report.NewEffects()
	if r == nil || r.src == nil {
		return eff, nil, nil
	}
	r.pn.collect(ctx, &eff, call)
	prev, cur, patch, err, herr := r.read(ctx, deadline, false)
	if err != nil {
		return eff, nil, errors.Join(err, herr)
	}
	r.delta(&eff, prev, cur, patch)
	return eff, cur.Unhashed, herr
}

// delta adds to eff the changes from prev to cur and makes cur the state
// the next mark starts from (patch: prev and cur hold only the paths that
// changed, to apply to it).
func (r *recorder) delta(eff *report.Effects, prev, cur overlay.Snapshot, patch bool) {
	// The changes one at a time: past the listing bound they are only
	// counted, so a flood costs the two snapshots, not a list of it.
	overlay.DeltaEach(prev, cur, func(c overlay.Change) bool {
		switch {
		case r.ignore[c.Path]:
		case len(eff.Files) >= r.maxListed:
			eff.FilesOmitted++
		default:
			eff.Files = append(eff.Files, fileChange(c))
		}
		return true
	})
	if patch {
		for p := range prev.Entries {
			if _, ok := cur.Entries[p]; !ok {
				delete(r.prev.Entries, p)
			}
		}
		for p, e := range cur.Entries {
			r.prev.Entries[p] = e
		}
	} else {
		r.prev = cur
	}
	eff.FilesTruncated = cur.Truncated
	eff.FilesUnhashed = len(cur.Unhashed)
}

// walkAgain walks the layers whatever the journals say and returns the
// file changes the last marks missed (none, when the journals told every
// change): the teardown's check of them.
func (r *recorder) walkAgain(ctx context.Context, deadline time.Time) (report.Effects, []string, error) {
	eff := report.NewEffects()
	if r == nil || r.src == nil || !r.patched {
		return eff, nil, nil // the last mark walked
	}
	prev, cur, patch, err, herr := r.read(ctx, deadline, true)
	if err != nil {
		return eff, nil, errors.Join(err, herr)
	}
	r.delta(&eff, prev, cur, patch)
	return eff, cur.Unhashed, herr
}

func fileChange(c overlay.Change) report.FileChange {
	fc := report.FileChange{Path: c.Path, PathEscaped: c.PathEscaped, Change: c.Change, Type: string(c.Type), Scope: c.Scope,
		Area: c.Area, Size: c.Size, SHA256: c.SHA256, SHA256Before: c.SHA256Before, LinkTarget: c.Link, Appended: c.Appended, LinesKept: c.LinesKept, ContentKept: c.ContentKept}
	if c.Type == overlay.Dir {
		fc.Size = 0 // a directory's size depends on the file system, not the server
	}
	if isBoundFile(c.Path) {
		fc.SHA256, fc.SHA256Before = "", ""
	}
	if c.Change != report.ChangeDeleted {
		fc.Mode = fmt.Sprintf("%04o", uint32(c.Mode.Perm())|sticky(c.Mode))
	}
	return fc
}

func sticky(m os.FileMode) uint32 {
	if m&os.ModeSticky != 0 {
		return 0o1000
	}
	return 0
}
