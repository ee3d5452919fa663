//go:build linux

package overlay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TakeBaseline records the identity of every path under dir, never
// following a link, within opts' bounds.
func TakeBaseline(dir string, opts BaselineOptions) (Baseline, error) {
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultBaselineFiles
	}
	if opts.HashBudget <= 0 {
		opts.HashBudget = DefaultBaselineHash
	}
	b := Baseline{Files: map[string]FileID{}}
	budget := opts.HashBudget
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if len(b.Files) >= opts.MaxFiles {
			b.Truncated = true
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		id := fileID(&st)
		if id.Type == File && st.Size <= budget {
			if sum, err := hashFile(p); err == nil {
				id.SHA256 = sum
				budget -= st.Size
			}
		}
		b.Files[rel] = id
		return nil
	})
	if err != nil {
		return Baseline{}, fmt.Errorf("taking the baseline of %s: %w", dir, err)
	}
	return b, nil
}

func fileID(st *unix.Stat_t) FileID {
	return FileID{Type: statType(st.Mode), Mode: st.Mode & 0o7777, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
		Ino: st.Ino, Dev: st.Dev, UID: st.Uid, GID: st.Gid}
}

func statType(mode uint32) Type {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return File
	case unix.S_IFDIR:
		return Dir
	case unix.S_IFLNK:
		return Symlink
	}
	return Other
}

func hashFile(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOATIME, 0)
	if err != nil {
		f, err = os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0) // O_NOATIME needs the owner or CAP_FOWNER
		if err != nil {
			return "", err
		}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Changes lists what the run changed in the host directory, sorted by
// path, each with why Apply would refuse it now (if it would).
func Changes(opts ApplyOptions) ([]WorkspaceChange, error) {
	if opts.MaxDiffBytes <= 0 {
		opts.MaxDiffBytes = DefaultMaxDiffBytes
	}
	w := &workspace{opts: opts}
	if err := w.open(); err != nil {
		return nil, err
	}
	defer w.close()
	return w.changes()
}

// Apply writes the changes under paths (every change when none is given)
// into the host directory, as its owner: a modified file keeps its
// owner, a created one takes the directory's. Each change is checked
// again just before it is written; one refused is skipped and listed,
// the others go on. Deletions go first, deepest first, then directories,
// then files.
func Apply(ctx context.Context, opts ApplyOptions, paths ...string) (ApplyResult, error) {
	if opts.MaxDiffBytes <= 0 {
		opts.MaxDiffBytes = DefaultMaxDiffBytes
	}
	w := &workspace{ctx: ctx, opts: opts, named: map[string]bool{}}
	for _, p := range paths {
		if rel, ok := cleanRel(filepath.ToSlash(p)); ok {
			w.named[rel] = true
		}
	}
	if err := w.open(); err != nil {
		return ApplyResult{}, err
	}
	defer w.close()
	all, err := w.changes()
	if err != nil {
		return ApplyResult{}, err
	}
	var res ApplyResult
	picked := map[string]bool{}
	if len(paths) == 0 {
		for _, c := range all {
			picked[c.Path] = true
		}
	}
	for _, p := range paths {
		rel, ok := cleanRel(filepath.ToSlash(p))
		if !ok {
			res.Refused = append(res.Refused, &RefusedError{Path: p, Reason: RefuseEscapes, Detail: "the path leaves the directory"})
			continue
		}
		n := 0
		for _, c := range all {
			if underRel(c.Path, rel) {
				picked[c.Path] = true
				n++
			}
		}
		if n == 0 {
			res.Refused = append(res.Refused, &RefusedError{Path: rel, Reason: RefuseUnknown, Detail: "the run did not change it"})
		}
	}
	// A created directory above a picked path comes with it.
	byPath := map[string]WorkspaceChange{}
	for _, c := range all {
		byPath[c.Path] = c
	}
	for p := range picked {
		if byPath[p].Refused != nil {
			continue // it will not be written: nothing is made for it
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if c, ok := byPath[d]; ok && c.Type == Dir && c.Change == report.ChangeCreated {
				picked[d] = true
				if w.named[p] {
					w.named[d] = true // made for a path named: named with it
				}
			}
		}
	}
	var todo []WorkspaceChange
	for _, c := range all {
		if !picked[c.Path] {
			continue
		}
		if c.Refused != nil && c.Refused.Reason.HeldBack() && w.named[c.Path] {
			// Held back when listed, named since (a directory above a
			// path named): checked again.
			c.Refused = nil
			var re *RefusedError
			if err := w.check(c); errors.As(err, &re) {
				c.Refused = re
			}
		}
		todo = append(todo, c)
	}
	sort.SliceStable(todo, func(i, j int) bool { return applyOrder(todo[i], todo[j]) })
	// The bound, before anything is written: what a file claims, not
	// the blocks it holds (a sparse file of 1 TiB is 1 TiB to a reader).
	if re := applyBound(opts, todo); re != nil {
		res.Refused = append(res.Refused, re)
		return res, nil
	}
	// Refused directories, and why: nothing below them is written.
	failed := map[string]*RefusedError{}
	refusal := func(c WorkspaceChange, err error) *RefusedError {
		var re *RefusedError
		if !errors.As(err, &re) {
			re = &RefusedError{Path: c.Path, Reason: RefuseHostChanged, Detail: err.Error()}
		}
		return re
	}
	// A host directory removed is removed whole or not at all: checked
	// before what is in it is deleted.
	for _, c := range todo {
		if base, ok := w.opts.Baseline.Files[c.Path]; ok && base.Type == Dir && (c.Change == report.ChangeDeleted || c.Type != Dir) {
			if err := w.check(c); err != nil {
				failed[c.Path] = refusal(c, err)
			}
		}
	}
	for _, c := range todo {
		if err := ctx.Err(); err != nil {
			// Interrupted: what was written is whole, the rest untouched.
			return res, fmt.Errorf("applying: %w", err)
		}
		if d, above := failedAbove(failed, c.Path); above != nil {
			// Its own reason if it has one, else its directory's.
			re := &RefusedError{Path: c.Path, Reason: above.Reason, Detail: fmt.Sprintf("its directory %s was %s: %s", d, heldOrRefused(above.Reason), above.Detail)}
			if err := w.check(c); err != nil {
				re = refusal(c, err)
			}
			res.Refused = append(res.Refused, re)
			if c.Type == Dir {
				failed[c.Path] = re
			}
			continue
		}
		if err := w.apply(c); err != nil {
			re := refusal(c, err)
			res.Refused = append(res.Refused, re)
			if c.Type == Dir || c.Was == Dir {
				failed[c.Path] = re
			}
			continue
		}
		res.Applied = append(res.Applied, c)
	}
	return res, nil
}

// MaxApplyEntries bounds the paths one apply writes: an entry costs an
// inode and a block whatever its size.
const MaxApplyEntries = 100_000

// applyBlock is what an entry costs at least: a block.
const applyBlock = 4096

// applyBound refuses an apply whose files claim more than its bound (a
// file its apparent size, every entry a block at least), or that makes
// more than MaxApplyEntries paths; nil when it fits. A bound of 0 (a
// full disk's default) lets nothing through; only a negative one is
// none.
func applyBound(opts ApplyOptions, todo []WorkspaceChange) *RefusedError {
	bound := opts.MaxBytes
	if bound == 0 {
		var err error
		if bound, err = DefaultApplyBound(opts.Host); err != nil {
			return &RefusedError{Path: ".", Reason: RefuseApplyBound, Detail: err.Error() + ": nothing was written"}
		}
	}
	var total int64
	n := 0
	for _, c := range todo {
		if c.Change == report.ChangeDeleted || c.Refused != nil {
			continue
		}
		n++
		cost := int64(applyBlock)
		if c.Type == File {
			cost = max(c.Size, applyBlock)
		}
		if n > MaxApplyEntries {
			return &RefusedError{Path: ".", Reason: RefuseApplyBound, Detail: fmt.Sprintf("the apply would make more than %d paths: nothing was written", MaxApplyEntries)}
		}
		if bound >= 0 && cost > bound-total {
			// Compared before it is added: a sum of sizes near 2^63 cannot
			// wrap past the bound.
			return &RefusedError{Path: ".", Reason: RefuseApplyBound,
				Detail: fmt.Sprintf("the apply would write more than its bound of %d bytes (the files' apparent sizes, a block at least for each path; --max-apply): nothing was written", bound)}
		}
		total += cost
	}
	return nil
}

// DefaultApplyBound is the bound of an apply into dir: the smaller of
// ApplyBoundCap and a tenth of the space free on its file system.
func DefaultApplyBound(dir string) (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return 0, fmt.Errorf("reading the free space of %s: %w", dir, err)
	}
	return min(ApplyBoundCap, int64(fs.Bavail)*fs.Bsize/10), nil
}

// failedAbove is the refused directory above p, nearest first, and why.
func failedAbove(failed map[string]*RefusedError, p string) (string, *RefusedError) {
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if re := failed[d]; re != nil {
			return d, re
		}
	}
	return "", nil
}

func heldOrRefused(r Refusal) string {
	if r.HeldBack() {
		return "held back"
	}
	return "refused"
}

// applyOrder: deletions first, deepest first; then the rest by depth,
// directories before files.
func applyOrder(a, b WorkspaceChange) bool {
	da, db := a.Change == report.ChangeDeleted, b.Change == report.ChangeDeleted
	if da != db {
		return da
	}
	ca, cb := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
	if da {
		if ca != cb {
			return ca > cb
		}
		return a.Path > b.Path
	}
	if ca != cb {
		return ca < cb
	}
	if (a.Type == Dir) != (b.Type == Dir) {
		return a.Type == Dir
	}
	return a.Path < b.Path
}

// workspace is a host directory and its run's upper dir, both held open.
type workspace struct {
	ctx  context.Context
	opts ApplyOptions
	// named are the paths Apply was given by name: held back no more.
	named       map[string]bool
	host, upper int
	hostID      FileID
}

func (w *workspace) open() error {
	var err error
	w.host, w.upper = -1, -1
	if w.host, err = unix.Open(w.opts.Host, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("opening the host directory %s: %w", w.opts.Host, err)
	}
	if w.upper, err = unix.Open(w.opts.Upper, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		w.close()
		return fmt.Errorf("opening the run's changes %s: %w", w.opts.Upper, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(w.host, &st); err != nil {
		w.close()
		return fmt.Errorf("reading the host directory %s: %w", w.opts.Host, err)
	}
	w.hostID = fileID(&st)
	if b, ok := w.opts.Baseline.Files[""]; ok && (b.Ino != w.hostID.Ino || b.Dev != w.hostID.Dev) {
		w.close()
		return fmt.Errorf("the host directory %s is not the one the run started with (another inode)", w.opts.Host)
	}
	return nil
}

func (w *workspace) close() {
	for _, fd := range []*int{&w.host, &w.upper} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// beneath opens rel under root, following no link anywhere on the way.
func beneath(root int, rel string, flags uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV}
	for {
		fd, err := unix.Openat2(root, rel, &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// hostStat is the host path's identity now; ok false when it is not
// there. A parent that is a link, or not a directory, is an escape.
func (w *workspace) hostStat(rel string) (FileID, bool, error) {
	dir, name := path.Split(rel)
	pfd, err := beneath(w.host, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return FileID{}, false, nil
		}
		return FileID{}, false, escapeErr(rel, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return FileID{}, false, nil
		}
		return FileID{}, false, err
	}
	return fileID(&st), true, nil
}

func escapeErr(rel string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		return &RefusedError{Path: rel, Reason: RefuseEscapes, Detail: "a parent on the host is a symlink, a mount or not a directory"}
	}
	return err
}

// changes walks the upper dir.
func (w *workspace) changes() ([]WorkspaceChange, error) {
	inUpper := map[string]bool{}
	var opaque []string
	var out []WorkspaceChange
	var walk func(dfd int, rel string) error
	walk = func(dfd int, rel string) error {
		f := os.NewFile(uintptr(dfd), rel)
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			return fmt.Errorf("listing %s in the run's changes: %w", rel, err)
		}
		sort.Strings(names)
		for _, name := range names {
			p := path.Join(rel, name)
			inUpper[p] = true
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("reading %s in the run's changes: %w", p, err)
			}
			c, descend, err := w.entry(dfd, name, p, &st)
			if err != nil {
				return err
			}
			out = append(out, c...)
			if descend {
				if opaqueAt(dfd, name) {
					opaque = append(opaque, p)
				}
				sub, err := unix.Openat(dfd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("opening %s in the run's changes: %w", p, err)
				}
				if err := walk(sub, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// A description of its own: listing moves the offset.
	root, err := unix.Openat(w.upper, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the run's changes: %w", err)
	}
	if err := walk(root, ""); err != nil {
		return nil, err
	}
	// An opaque directory hides what the host had in it: each such path
	// the upper does not have again is deleted.
	for p, id := range w.opts.Baseline.Files {
		if p == "" || inUpper[p] {
			continue
		}
		for _, o := range opaque {
			if strings.HasPrefix(p, o+"/") && !hiddenAbove(p, o, inUpper) {
				out = append(out, w.deleted(p, id))
				break
			}
		}
	}
	// A whiteout over a host directory, or a file in its place, deletes
	// everything in it too.
	for _, c := range out {
		if (c.Change != report.ChangeDeleted || c.Type != Dir) && c.Was != Dir {
			continue
		}
		for p, id := range w.opts.Baseline.Files {
			if strings.HasPrefix(p, c.Path+"/") && !inUpper[p] {
				out = append(out, w.deleted(p, id))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	out = dedupe(out)
	for i := range out {
		if out[i].Refused == nil {
			if err := w.check(out[i]); err != nil {
				var re *RefusedError
				if !errors.As(err, &re) {
					return nil, err
				}
				out[i].Refused = re
			}
		}
	}
	return out, nil
}

// hiddenAbove: a path under an opaque directory that sits below another
// upper entry reported already (the opaque dir's own subtree in the upper
// shadows it) is not listed twice.
func hiddenAbove(p, o string, inUpper map[string]bool) bool {
	for d := path.Dir(p); d != o && d != "." && d != "/"; d = path.Dir(d) {
		if inUpper[d] {
			return true
		}
	}
	return false
}

func dedupe(cs []WorkspaceChange) []WorkspaceChange {
	out := cs[:0]
	for i, c := range cs {
		if i > 0 && cs[i-1].Path == c.Path {
			continue
		}
		out = append(out, c)
	}
	return out
}

func opaqueAt(dfd int, name string) bool {
	return xattrAt(dfd, name, "trusted.overlay.opaque") == "y"
}

// xattrAt reads a short xattr of dfd/name without following a link.
// It returns "" when the attribute is not there, and "\x00" for one that
// is there and empty.
func xattrAt(dfd int, name, attr string) string {
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	// Through the descriptor: the attribute of what it opened (the link
	// itself, were it one), not of the magic link.
	n, err := unix.Getxattr(fmt.Sprintf("/proc/self/fd/%d", fd), attr, buf)
	if err != nil || n < 0 {
		return ""
	}
	if n == 0 {
		return "\x00"
	}
	return string(buf[:n])
}

// entry turns one upper dir entry into changes; descend says to walk
// into it.
func (w *workspace) entry(dfd int, name, p string, st *unix.Stat_t) ([]WorkspaceChange, bool, error) {
	base, inBase := w.opts.Baseline.Files[p]
	t := statType(st.Mode)
	c := WorkspaceChange{Path: p, Type: t, Mode: st.Mode & 0o7777}
	if inBase && base.Type != t {
		c.Was = base.Type
	}
	if inBase && base.Type == t {
		c.ModeBefore = base.Mode
	}
	if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
		// A whiteout: the host path is deleted.
		if !inBase {
			return nil, false, nil // it hid a planted file, not a host one
		}
		return []WorkspaceChange{w.deleted(p, base)}, false, nil
	}
	c.Change = report.ChangeCreated
	if inBase {
		c.Change = report.ChangeModified
	}
	switch t {
	case Dir:
		if xattrAt(dfd, name, "trusted.overlay.redirect") != "" {
			c.Refused = &RefusedError{Path: p, Reason: RefuseOverlay, Detail: "a renamed directory whose contents stay in the host's layer"}
			return []WorkspaceChange{c}, false, nil
		}
		if inBase && base.Type == Dir {
			return nil, true, nil // copied up on the way to a change below
		}
		return []WorkspaceChange{c}, true, nil
	case Symlink:
		buf := make([]byte, 4096)
		n, _ := unix.Readlinkat(dfd, name, buf)
		c.LinkTarget = string(buf[:max(n, 0)])
		c.Refused = &RefusedError{Path: p, Reason: RefuseSymlink, Detail: "symbolic links are not applied"}
		return []WorkspaceChange{c}, false, nil
	case Other:
		c.Refused = &RefusedError{Path: p, Reason: RefuseSpecial, Detail: "devices, fifos and sockets are not applied"}
		return []WorkspaceChange{c}, false, nil
	}
	c.Size, c.Allocated = st.Size, st.Blocks*512
	if xattrAt(dfd, name, "trusted.overlay.metacopy") != "" {
		c.Refused = &RefusedError{Path: p, Reason: RefuseOverlay, Detail: "a metadata-only copy whose data stays in the host's layer"}
		return []WorkspaceChange{c}, false, nil
	}
	cur, err := readAt(dfd, name, w.opts.MaxDiffBytes)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s in the run's changes: %w", p, err)
	}
	var old []byte
	oldKnown := false
	if inBase && base.Type == File {
		// The host copy as the run started, if it is still that.
		if now, ok, err := w.hostStat(p); err == nil && ok && base.same(now) {
			if fd, err := beneath(w.host, p, unix.O_RDONLY); err == nil {
				old, err = readFD(fd, w.opts.MaxDiffBytes)
				unix.Close(fd)
				oldKnown = err == nil
			}
		}
		if oldKnown && old != nil && cur != nil && bytes.Equal(old, cur) && base.Mode == c.Mode {
			return nil, false, nil // copied up, never changed (opened for writing, touched)
		}
		if !oldKnown && base.SHA256 != "" && cur != nil && hex.EncodeToString(sha(cur)) == base.SHA256 && base.Mode == c.Mode {
			return nil, false, nil
		}
	}
	w.diff(&c, old, oldKnown || !inBase, cur, st.Size)
	if path.Base(p) == "package.json" {
		c.scripts = scriptsChanged(old, oldKnown || !inBase, cur)
	}
	return []WorkspaceChange{c}, false, nil
}

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// diff fills the change's diff: cur nil is over the bound.
func (w *workspace) diff(c *WorkspaceChange, old []byte, oldKnown bool, cur []byte, size int64) {
	switch {
	case cur == nil || (oldKnown && old == nil && c.Change != report.ChangeCreated):
		c.DiffOmitted = fmt.Sprintf("over the diff bound of %d bytes", w.opts.MaxDiffBytes)
	case !oldKnown:
		c.DiffOmitted = "the host copy changed since the run started"
	case !IsText(cur) || !IsText(old):
		c.Binary = true
	default:
		from := "a/" + c.Path
		if c.Change == report.ChangeCreated {
			from = "/dev/null"
		}
		c.Diff = UnifiedDiff(from, "b/"+c.Path, old, cur)
	}
}

// deleted is the deletion of host path p, with the diff of a text file.
func (w *workspace) deleted(p string, base FileID) WorkspaceChange {
	c := WorkspaceChange{Path: p, Change: report.ChangeDeleted, Type: base.Type, Size: base.Size}
	if base.Type != File {
		c.Size = 0
		return c
	}
	if fd, err := beneath(w.host, p, unix.O_RDONLY); err == nil {
		old, err := readFD(fd, w.opts.MaxDiffBytes)
		unix.Close(fd)
		switch {
		case err != nil:
		case old == nil:
			c.DiffOmitted = fmt.Sprintf("over the diff bound of %d bytes", w.opts.MaxDiffBytes)
		case !IsText(old):
			c.Binary = true
		default:
			c.Diff = UnifiedDiff("a/"+p, "/dev/null", old, nil)
			if c.Diff == "" {
				c.Diff = "--- a/" + p + "\n+++ /dev/null\n" // an empty file
			}
		}
	}
	return c
}

// readAt reads dfd/name, a regular file, nil when over max bytes.
func readAt(dfd int, name string, max int64) ([]byte, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readFD(fd, max)
}

// readFD reads fd to its end (the caller closes it), nil when over max
// bytes.
func readFD(fd int, max int64) ([]byte, error) {
	out := []byte{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
		if int64(len(out)) > max {
			return nil, nil
		}
	}
}

// check says why c cannot be applied now, if it cannot.
func (w *workspace) check(c WorkspaceChange) error {
	if c.Refused != nil {
		return c.Refused
	}
	if _, ok := cleanRel(c.Path); !ok || c.Path == "" {
		return &RefusedError{Path: c.Path, Reason: RefuseEscapes, Detail: "the path leaves the directory"}
	}
	for _, pl := range w.opts.Planted {
		if rel, ok := cleanRel(strings.TrimPrefix(pl, "/")); ok && rel != "" && underRel(c.Path, rel) {
			return &RefusedError{Path: c.Path, Reason: RefusePlanted, Detail: "the runner planted it"}
		}
	}
	if c.Type == File && c.Change != report.ChangeDeleted && c.Mode&(unix.S_ISUID|unix.S_ISGID|unix.S_ISVTX) != 0 {
		return &RefusedError{Path: c.Path, Reason: RefuseSetID, Detail: fmt.Sprintf("mode %04o has a setuid, setgid or sticky bit", c.Mode)}
	}
	if c.Type == Dir && c.Change != report.ChangeDeleted && c.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return &RefusedError{Path: c.Path, Reason: RefuseSetID, Detail: fmt.Sprintf("mode %04o has a setuid or setgid bit", c.Mode)}
	}
	if err := w.safeMode(c); err != nil {
		return err
	}
	if err := w.holdBack(c); err != nil {
		return err
	}
	// Every parent on the host: a real directory, or one this apply makes.
	if d := path.Dir(c.Path); d != "." {
		fd, err := beneath(w.host, d, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			unix.Close(fd)
		} else if !errors.Is(err, unix.ENOENT) {
			return escapeErr(c.Path, err)
		}
	}
	base, inBase := w.opts.Baseline.Files[c.Path]
	now, exists, err := w.hostStat(c.Path)
	if err != nil {
		return err
	}
	switch {
	case !inBase && c.Change != report.ChangeCreated:
		return &RefusedError{Path: c.Path, Reason: RefuseNoBaseline, Detail: "no record of it from the run's start"}
	case !inBase && w.opts.Baseline.Truncated && exists:
		return &RefusedError{Path: c.Path, Reason: RefuseNoBaseline, Detail: "past the baseline's bound"}
	case !inBase && exists:
		return &RefusedError{Path: c.Path, Reason: RefuseHostChanged, Detail: "created on the host since the run started"}
	case inBase && !exists:
		return &RefusedError{Path: c.Path, Reason: RefuseHostChanged, Detail: "deleted on the host since the run started"}
	case inBase && !base.same(now):
		return &RefusedError{Path: c.Path, Reason: RefuseHostChanged, Detail: "changed on the host since the run started"}
	}
	if inBase && base.Type == Dir && (c.Change == report.ChangeDeleted || c.Type != Dir) {
		// Removing a host directory removes what is in it: all of it must
		// be as it was.
		if err := w.checkTree(c.Path); err != nil {
			return err
		}
	}
	return nil
}

// safeMode refuses a file or directory made world-writable (the host
// copy was not).
func (w *workspace) safeMode(c WorkspaceChange) error {
	if c.Change == report.ChangeDeleted || (c.Type != File && c.Type != Dir) || c.Mode&0o002 == 0 {
		return nil
	}
	if c.Change == report.ChangeModified && c.Was == "" && c.ModeBefore&0o002 != 0 {
		return nil
	}
	return &RefusedError{Path: c.Path, Reason: RefuseMode, Detail: fmt.Sprintf("mode %04o makes it world-writable", c.Mode)}
}

// holdBack holds back a file given an executable bit, or one in a place
// that runs code on the host, unless it was named or code allowed.
func (w *workspace) holdBack(c WorkspaceChange) error {
	if w.opts.AllowExec || w.named[c.Path] {
		return nil
	}
	const how = "; name it, or pass --allow-exec, to apply it"
	// A directory is such a place when a file in it would be (.git/,
	// .github/workflows/).
	dirPlace := runsCode(c.Path + "/x")
	switch {
	case c.Change == report.ChangeDeleted:
		if dirPlace != "" {
			// A repository, keys, an editor's settings: not removed unasked.
			return &RefusedError{Path: c.Path, Reason: RefuseRunsCode, Detail: fmt.Sprintf("removing %s, in %s, is held back%s", c.Path, dirPlace, how)}
		}
		return nil
	case c.Type == Dir && (c.Change == report.ChangeCreated || c.Was != ""):
		if dirPlace != "" {
			return &RefusedError{Path: c.Path, Reason: RefuseRunsCode, Detail: fmt.Sprintf("%s/ holds what runs code on the host (%s)%s", c.Path, dirPlace, how)}
		}
		return nil
	case c.Type != File:
		return nil
	}
	if c.NewExec() {
		from := "no file"
		if c.Change == report.ChangeModified && c.Was == "" {
			from = fmt.Sprintf("%04o", c.ModeBefore)
		}
		return &RefusedError{Path: c.Path, Reason: RefuseExec, Detail: fmt.Sprintf("mode %s -> %04o makes it executable%s", from, c.Mode, how)}
	}
	if c.Mode&0o111 != 0 {
		return &RefusedError{Path: c.Path, Reason: RefuseExec, Detail: fmt.Sprintf("it rewrites an executable file (mode %04o)%s", c.Mode, how)}
	}
	if place := runsCode(c.Path); place != "" && (!strings.EqualFold(path.Base(c.Path), "package.json") || c.scripts) {
		return &RefusedError{Path: c.Path, Reason: RefuseRunsCode, Detail: fmt.Sprintf("%s runs code on the host (%s)%s", c.Path, place, how)}
	}
	if d, ok := w.gitDirAbove(c.Path); ok {
		return &RefusedError{Path: c.Path, Reason: RefuseRunsCode, Detail: fmt.Sprintf("%s is in a git directory (%s: HEAD, objects/, refs/), whose config runs code%s", c.Path, orDot(d), how)}
	}
	return nil
}

// gitDirAbove finds a directory above p that is a git directory (HEAD,
// objects/ and refs/ in it, in the run's changes or on the host): a bare
// repository, or one under another name, whose config git reads.
func (w *workspace) gitDirAbove(p string) (string, bool) {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if d == "." || d == "/" {
			d = ""
		}
		if w.present(path.Join(d, "HEAD"), false) && w.present(path.Join(d, "objects"), true) && w.present(path.Join(d, "refs"), true) {
			return d, true
		}
		if d == "" {
			return "", false
		}
	}
}

// present says whether rel is in the run's changes or on the host, a
// directory when dir.
func (w *workspace) present(rel string, dir bool) bool {
	for _, root := range []int{w.upper, w.host} {
		fd, err := beneath(root, rel, unix.O_PATH)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err == nil && (st.Mode&unix.S_IFMT == unix.S_IFDIR) == dir && !(st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0) {
			return true
		}
	}
	return false
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// checkTree checks that everything under host directory rel is as the
// baseline has it, and nothing was added.
func (w *workspace) checkTree(rel string) error {
	fd, err := beneath(w.host, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return escapeErr(rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		p := rel + "/" + n
		base, ok := w.opts.Baseline.Files[p]
		if !ok {
			return &RefusedError{Path: rel, Reason: RefuseHostChanged, Detail: fmt.Sprintf("%s was created on the host since the run started", p)}
		}
		now, exists, err := w.hostStat(p)
		if err != nil {
			return err
		}
		if !exists || !base.same(now) {
			return &RefusedError{Path: rel, Reason: RefuseHostChanged, Detail: fmt.Sprintf("%s changed on the host since the run started", p)}
		}
		if base.Type == Dir {
			if err := w.checkTree(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply writes one change, after checking it again.
func (w *workspace) apply(c WorkspaceChange) error {
	if err := w.check(c); err != nil {
		return err
	}
	dir, name := path.Split(c.Path)
	pfd, err := beneath(w.host, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return escapeErr(c.Path, err)
	}
	defer unix.Close(pfd)
	base, inBase := w.opts.Baseline.Files[c.Path]
	if c.Change == report.ChangeDeleted || (inBase && base.Type != c.Type) {
		if err := removeHost(pfd, name, base.Type); err != nil {
			return fmt.Errorf("removing %s: %w", c.Path, err)
		}
		if c.Change == report.ChangeDeleted {
			return nil
		}
	}
	// A modified file keeps its owner; what is created takes the
	// directory's.
	uid, gid := int(w.hostID.UID), int(w.hostID.GID)
	if inBase && base.Type == c.Type {
		uid, gid = int(base.UID), int(base.GID)
	}
	switch c.Type {
	case Dir:
		if err := unix.Mkdirat(pfd, name, c.Mode&0o777|0o700); err != nil {
			return fmt.Errorf("making %s: %w", c.Path, err)
		}
		if err := unix.Fchownat(pfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("owning %s: %w", c.Path, err)
		}
		// The sticky bit kept (set-id bits are refused).
		return unix.Fchmodat(pfd, name, c.Mode&0o1777, 0)
	case File:
		return w.writeFile(pfd, name, c, uid, gid, inBase && base.Type != c.Type)
	}
	return &RefusedError{Path: c.Path, Reason: RefuseSpecial, Detail: "not a file or directory"}
}

// writeFile copies the upper file into a temporary file beside the
// target, then renames it over the target, so that the host never sees
// half a file.
func (w *workspace) writeFile(pfd int, name string, c WorkspaceChange, uid, gid int, replaced bool) (err error) {
	src, err := beneath(w.upper, c.Path, unix.O_RDONLY)
	if err != nil {
		return fmt.Errorf("opening %s in the run's changes: %w", c.Path, err)
	}
	in := os.NewFile(uintptr(src), c.Path)
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	if statType(st.Mode) != File || st.Mode&(unix.S_ISUID|unix.S_ISGID|unix.S_ISVTX) != 0 {
		return &RefusedError{Path: c.Path, Reason: RefuseSetID, Detail: "the file changed in the run's changes since it was listed"}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := ".mcpsandbox-apply-" + hex.EncodeToString(rnd[:])
	dst, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	done := false
	defer func() {
		if !done {
			unix.Unlinkat(pfd, tmp, 0)
		}
	}()
	out := os.NewFile(uintptr(dst), tmp)
	err = w.copySparse(dst, src, st.Size)
	if err == nil {
		err = out.Chown(uid, gid)
	}
	if err == nil {
		err = out.Chmod(os.FileMode(st.Mode & 0o777))
	}
	if err == nil {
		err = out.Sync()
	}
	err = errors.Join(err, out.Close())
	if err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	// Once more, just before the host copy is replaced (or, when what
	// was there of another type has been removed, that nothing came).
	if replaced {
		if _, exists, err := w.hostStat(c.Path); err != nil {
			return err
		} else if exists {
			return &RefusedError{Path: c.Path, Reason: RefuseHostChanged, Detail: "created on the host while it was applied"}
		}
	} else if err := w.check(c); err != nil {
		return err
	}
	if err := unix.Renameat(pfd, tmp, pfd, name); err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	done = true
	return nil
}

// copySparse copies the data of src's first size bytes into dst at the
// same offsets, leaving its holes holes (a sparse file stays sparse), and
// stops when the apply is interrupted.
func (w *workspace) copySparse(dst, src int, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		data, err := unix.Seek(src, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		}
		if err != nil {
			return fmt.Errorf("finding data: %w", err)
		}
		hole, err := unix.Seek(src, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("finding a hole: %w", err)
		}
		for off = data; off < min(hole, size); {
			if w.ctx != nil {
				if err := w.ctx.Err(); err != nil {
					return err
				}
			}
			n, err := unix.Pread(src, buf[:min(int64(len(buf)), min(hole, size)-off)], off)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("the file shrank while it was copied")
			}
			if m, err := unix.Pwrite(dst, buf[:n], off); err != nil || m != n {
				return errors.Join(err, fmt.Errorf("writing: %d of %d bytes", m, n))
			}
			off += int64(n)
		}
	}
	return unix.Ftruncate(dst, size)
}

// removeHost removes pfd/name: a file, or a directory with everything in
// it (checked against the baseline before).
func removeHost(pfd int, name string, t Type) error {
	if t != Dir {
		return unix.Unlinkat(pfd, name, 0)
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return err
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			f.Close()
			return err
		}
		if err := removeHost(fd, n, statType(st.Mode)); err != nil {
			f.Close()
			return err
		}
	}
	f.Close()
	return unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
}

// Update records the host paths again after an apply: what was written
// is the host's now (and no longer a change), what was deleted is gone
// from the baseline with everything under it.
func (b *Baseline) Update(dir string, applied []WorkspaceChange) error {
	for _, c := range applied {
		if c.Change == report.ChangeDeleted || c.Was == Dir {
			for p := range b.Files {
				if p == c.Path || strings.HasPrefix(p, c.Path+"/") {
					delete(b.Files, p)
				}
			}
		}
		if c.Change == report.ChangeDeleted {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, filepath.FromSlash(c.Path)), &st); err != nil {
			return fmt.Errorf("recording %s: %w", c.Path, err)
		}
		id := fileID(&st)
		if id.Type == File {
			if sum, err := hashFile(filepath.Join(dir, filepath.FromSlash(c.Path))); err == nil {
				id.SHA256 = sum
			}
		}
		b.Files[c.Path] = id
	}
	return nil
}
