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
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// changeSource takes cumulative snapshots of a container's changes.
type changeSource interface {
	Snapshot(ctx context.Context) (overlay.Snapshot, error)
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
			return &upperSource{overlay.UpperDir{Upper: upper, Lowers: lowers, Limits: lim}}, ChangesUpperDir, nil
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

func (u *upperSource) Close(context.Context) error { return nil }

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
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{}, Cmd: []string{"/bin/true"},
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
	return &apiSource{cli: cli, id: id, ref: created.ID, lim: lim, before: map[string]*overlay.Entry{}, hashes: map[string]apiHash{}}, nil
}

func (a *apiSource) Close(ctx context.Context) error {
	return removeContainer(context.WithoutCancel(ctx), a.cli, a.ref)
}

func (a *apiSource) Snapshot(ctx context.Context) (overlay.Snapshot, error) {
	changes, err := a.cli.ContainerDiff(ctx, a.id)
	if err != nil {
		return overlay.Snapshot{}, fmt.Errorf("listing changes of container %.12s: %w", a.id, err)
	}
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
				e.SHA256 = a.hash(ctx, a.id, c.Path, e, true)
			}
		}
		snap.Entries[c.Path] = e
	}
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
			v.SHA256 = a.hash(ctx, a.ref, p, v, false)
		}
		e = &v
	}
	a.before[p] = e
	return e
}

// hash reads a regular file through the archive API and hashes it, within
// the size bound; the engine resolves the path inside the container, never
// on the host.
func (a *apiSource) hash(ctx context.Context, id, p string, e overlay.Entry, cache bool) string {
	if e.Size > a.lim.MaxHashBytes {
		return ""
	}
	if h, ok := a.hashes[p]; cache && ok && h.size == e.Size && h.mtime == e.ModTime {
		return h.sum
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
	sum := hex.EncodeToString(h.Sum(nil))
	if cache {
		a.hashes[p] = apiHash{size: e.Size, mtime: e.ModTime, sum: sum}
	}
	return sum
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

// mark snapshots now and returns the effects since the last mark; call
// says whether the stretch was a tool call.
func (r *recorder) mark(ctx context.Context, call bool) (report.Effects, error) {
	eff := report.NewEffects()
	if r == nil || r.src == nil {
		return eff, nil
	}
	r.pn.collect(ctx, &eff, call)
	cur, err := r.src.Snapshot(ctx)
	if err != nil {
		return eff, err
	}
	changes := overlay.Delta(r.prev, cur)
	r.prev = cur
	eff.FilesTruncated = cur.Truncated
	for _, c := range changes {
		if r.ignore[c.Path] {
			continue
		}
		if len(eff.Files) >= r.maxListed {
			eff.FilesOmitted++
			continue
		}
		eff.Files = append(eff.Files, fileChange(c))
	}
	return eff, nil
}

func fileChange(c overlay.Change) report.FileChange {
	fc := report.FileChange{Path: c.Path, PathEscaped: c.PathEscaped, Change: c.Change, Type: string(c.Type), Scope: c.Scope,
		Area: c.Area, Size: c.Size, SHA256: c.SHA256, SHA256Before: c.SHA256Before, LinkTarget: c.Link, Appended: c.Appended}
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
