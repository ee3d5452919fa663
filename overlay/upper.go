//go:build linux

package overlay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hashed remembers a file's hash with what would change if it were written.
type hashed struct {
	// path is the file's path as first met: the snapshots name the file
	// with it, so that they and this cache hold one copy of it, not one a
	// walk.
	path                    string
	ino, size, mtime, ctime int64
	sum                     string
	prefix                  string // hash of the first prefixLen bytes
	prefixLen               int64
	digest                  string // a held file over the size bound
	lines                   *lineSet
}

// Snapshot walks the upper dir once.
func (u *UpperDir) Snapshot(ctx context.Context) (Snapshot, error) {
	return u.SnapshotWith(ctx, SnapshotOptions{})
}

// SnapshotWith walks the upper dir once, hashing again the files opts
// names (and every other name of theirs: a hard link is the same bytes)
// whatever their stat says, within the budget.
func (u *UpperDir) SnapshotWith(ctx context.Context, opts SnapshotOptions) (Snapshot, error) {
	lim := u.Limits.withDefaults()
	if u.hashes == nil {
		u.hashes, u.lower, u.seed = map[string]hashed{}, map[string]*Entry{}, maphash.MakeSeed()
	}
	budget := opts.Budget
	if budget == nil {
		budget = NewBudget(lim.HashBudget, time.Time{})
	}
	snap := Snapshot{Entries: map[string]Entry{}}
	// Hard links: the names of each multiply-linked inode, and the inodes
	// verified, so that every name of a held file is hashed again.
	links := map[uint64][]string{}
	verified := map[uint64]bool{}
	var opaque []string // opaque directories of the upper dir, seen so far
	last, pathBytes := "", 0
	// The journal's watches are added again as the walk meets each
	// directory; what it told before the walk, the walk reads.
	u.live = nil
	met := u.Journal.begin()
	if met != nil {
		if err := u.watchRoot(); err != nil {
			return snap, err
		}
		met[""] = true
	}
	err := walkFirst(u.Upper, lim.First, func(n node) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		snap.Count++
		pathBytes += len(n.rel)
		late := snap.Count%deadlineEvery == 0 && Passed(budget.Deadline())
		if snap.Count > lim.MaxEntries || pathBytes > lim.MaxPathBytes || late {
			// Past the deadline the walk ends as at the bound: a snapshot
			// of 200,000 entries takes seconds, and the run's --timeout
			// holds teardown's too.
			snap.Truncated, snap.PastDeadline = true, late
			if late {
				snap.Count--
			}
			first := lim.First
			snap.Covers = func(p string) bool { return walkedBefore(first, p, last) }
			return errSkipAll
		}
		last = n.rel
		rel := n.rel
		if h, ok := u.hashes[rel]; ok {
			rel = h.path
		}
		if n.fd > 0 && met != nil {
			// Watched before it is read: a child made after is told.
			u.Journal.watch(n.fd, rel)
			met[rel] = true
		}
		force := opts.VerifyAll || opts.Verify[rel]
		e := u.entryOf(n, rel, underAny(rel, opaque), lim, force, budget)
		if e.Opaque {
			opaque = append(opaque, rel)
		}
		if e.Type != Dir && e.Kind != Removed && n.st.Nlink > 1 {
			links[n.st.Ino] = append(links[n.st.Ino], rel)
		}
		if e.Type == File && e.Kind != Removed {
			snap.Bytes += e.Size
			if force {
				verified[n.st.Ino] = true
			}
		}
		snap.Entries[rel] = e
		return nil
	})
	if err != nil {
		return snap, err
	}
	for ino, names := range links {
		if !verified[ino] {
			continue
		}
		for _, rel := range names {
			if opts.VerifyAll || opts.Verify[rel] {
				continue
			}
			u.rehashLink(rel, &snap, lim, budget)
		}
	}
	for p, e := range snap.Entries {
		if e.Unhashed {
			snap.Unhashed = append(snap.Unhashed, p)
		}
	}
	sort.Strings(snap.Unhashed)
	for p := range u.hashes {
		if _, ok := snap.Entries[p]; !ok {
			u.forget(p)
		}
	}
	u.Journal.end(met)
	if met != nil && !snap.Truncated {
		// The state the journal's updates start from (its own copy: the
		// caller may add to snap's).
		u.live = &liveState{entries: maps.Clone(snap.Entries), links: links, inoOf: map[string]uint64{}, pathBytes: pathBytes, bytes: snap.Bytes, unhashed: map[string]bool{}}
		for ino, names := range links {
			for _, p := range names {
				u.live.inoOf[p] = ino
			}
		}
		for _, p := range snap.Unhashed {
			u.live.unhashed[p] = true
		}
	}
	return snap, nil
}

// entryOf is the entry of the node met at rel (hidden: below an opaque
// directory of the upper dir, so that the image's is not its before).
func (u *UpperDir) entryOf(n node, rel string, hidden bool, lim Limits, force bool, budget *Budget) Entry {
	info := statInfo{name: rel, st: n.st}
	e := Entry{Type: TypeOf(info.Mode()), Mode: info.Mode(), Size: info.Size(), ModTime: n.st.Mtim.Nano(),
		UID: int(n.st.Uid), GID: int(n.st.Gid), Ctime: n.st.Ctim.Nano()}
	if !hidden {
		e.Before = u.lookupLower(rel, lim)
	}
	switch {
	case n.st.Mode&unix.S_IFMT == unix.S_IFCHR && n.st.Rdev == 0:
		e = Entry{Kind: Removed, Type: Other, Before: e.Before} // a whiteout
		if e.Before != nil {
			e.Type = e.Before.Type
		}
	case e.Before != nil:
		e.Kind = Changed
	default:
		e.Kind = Added
	}
	switch e.Type {
	case Dir:
		if e.Kind != Removed && n.opaque {
			e.Opaque = true
		}
	case Symlink:
		if e.Kind != Removed {
			e.Link = n.link
		}
	case File:
		if e.Kind != Removed {
			u.hash(&e, rel, n.st, lim, force, budget)
		}
	}
	return e
}

// rehashLink hashes again another name of a verified file.
func (u *UpperDir) rehashLink(rel string, snap *Snapshot, lim Limits, budget *Budget) {
	e := snap.Entries[rel]
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(u.Upper, rel), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return // gone or replaced since the walk: the next snapshot tells
	}
	e.SHA256, e.PrefixSHA256, e.Digest, e.Unhashed, e.lines = "", "", "", false, nil
	u.hash(&e, rel, st, lim, true, budget)
	snap.Entries[rel] = e
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// isWhiteout reports an overlayfs whiteout: a character device 0/0.
func isWhiteout(info fs.FileInfo) bool {
	if info.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && unix.Major(uint64(st.Rdev)) == 0 && unix.Minor(uint64(st.Rdev)) == 0
}

// isOpaque reports an opaque directory at p.
func isOpaque(p string) bool {
	return opaqueXattr(func(attr string, buf []byte) (int, error) { return unix.Lgetxattr(p, attr, buf) })
}

// hash sets e's content hashes: the sha256 of a regular upper file within
// the size bound, and of its first n bytes, where n is the size it had
// when last seen (in an earlier snapshot, or in the image): equal to the
// old hash, the file was only appended to. Hashes are reused while inode,
// size and times are unchanged, unless force; what is read comes out of
// the budget, and a file it cannot cover is left unhashed. A file over the
// size bound is hashed only when forced (a process holds it), into Digest.
func (u *UpperDir) hash(e *Entry, rel string, st unix.Stat_t, lim Limits, force bool, budget *Budget) {
	big := st.Size > lim.MaxHashBytes
	key := hashed{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	h, seen := u.hashes[rel]
	if !force && seen && h.ino == key.ino && h.size == key.size && h.mtime == key.mtime && h.ctime == key.ctime {
		e.SHA256, e.PrefixSHA256, e.Digest, e.lines = h.sum, h.prefix, h.digest, h.lines
		return
	}
	if big && !force {
		u.forget(rel)
		return // reported with its size and no hash
	}
	if !budget.Take(st.Size) {
		// Not hashed, and not remembered: the next snapshot hashes it
		// if it can.
		u.forget(rel)
		e.Unhashed = true
		return
	}
	if big {
		digest, _, err := hashBeneath(u.Upper, rel, st.Size, -1)
		if err != nil {
			u.forget(rel)
			return
		}
		key.digest = digest
		u.remember(rel, key, lim)
		e.Digest = digest
		return
	}
	key.prefixLen = -1
	switch {
	case seen:
		key.prefixLen = h.size
	case e.Before != nil && e.Before.Type == File:
		key.prefixLen = e.Before.Size
	}
	sum, prefix, lines, err := hashLines(u.Upper, rel, lim.MaxHashBytes, key.prefixLen, lim.LineBound, u.seed)
	if err != nil {
		return
	}
	key.sum, key.prefix, key.lines = sum, prefix, lines
	key = u.remember(rel, key, lim)
	e.SHA256, e.PrefixSHA256, e.lines = sum, prefix, key.lines
}

// remember keeps h as rel's hashes, its line hashes only while the lines
// kept stay within lim.MaxLines; it returns what it kept.
func (u *UpperDir) remember(rel string, h hashed, lim Limits) hashed {
	u.forget(rel)
	if u.lineCount+h.lines.n() > lim.MaxLines {
		h.lines = nil
	}
	u.lineCount += h.lines.n()
	h.path = rel
	u.hashes[rel] = h
	return h
}

// forget drops rel's hashes.
func (u *UpperDir) forget(rel string) {
	if h, ok := u.hashes[rel]; ok {
		u.lineCount -= h.lines.n()
		delete(u.hashes, rel)
	}
}

// lookupLower finds a path in the lower dirs, top first, honouring
// whiteouts and opaque directories, one component at a time.
func (u *UpperDir) lookupLower(p string, lim Limits) *Entry {
	if e, ok := u.lower[p]; ok {
		return e
	}
	if dir := path.Dir(p); dir != "/" {
		// Below a directory the image does not have, nothing is in the
		// image: not looked up, and not kept (a flood of new files in a new
		// directory costs one lookup).
		if e, ok := u.lower[dir]; ok && e == nil {
			return nil
		}
	}
	e := lookupLayers(u.Lowers, p, lim, u.seed)
	if e != nil && e.lines != nil {
		if u.lineCount+e.lines.n() > lim.MaxLines {
			e.lines = nil
		}
		u.lineCount += e.lines.n()
	}
	u.lower[p] = e
	return e
}

func lookupLayers(lowers []string, p string, lim Limits, seed maphash.Seed) *Entry {
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, root := range lowers {
		cur := root
		hiddenBelow := false
		for i, c := range comps {
			cur = filepath.Join(cur, c)
			info, err := os.Lstat(cur)
			if err != nil {
				break // not in this layer; a lower one may have it
			}
			if isWhiteout(info) {
				return nil
			}
			if i == len(comps)-1 {
				return lowerEntry(root, p, info, lim, seed)
			}
			if !info.IsDir() {
				return nil // a file here hides the path below
			}
			if isOpaque(cur) {
				hiddenBelow = true
			}
		}
		if hiddenBelow {
			return nil
		}
	}
	return nil
}

func lowerEntry(root, p string, info fs.FileInfo, lim Limits, seed maphash.Seed) *Entry {
	e := &Entry{Type: TypeOf(info.Mode()), Mode: info.Mode(), Size: info.Size(), ModTime: info.ModTime().UnixNano()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = int(st.Uid), int(st.Gid)
	}
	switch e.Type {
	case File:
		if e.Size <= lim.MaxHashBytes {
			e.SHA256, _, e.lines, _ = hashLines(root, p, lim.MaxHashBytes, -1, lim.LineBound, seed)
		}
	case Symlink:
		e.Link, _ = os.Readlink(filepath.Join(root, p))
	}
	return e
}

// hashBeneath hashes root/rel, resolving rel strictly beneath root with no
// symlinks at all, and only if it is a regular file. With prefixLen >= 0 it
// also returns the hash of the first prefixLen bytes ("" if the file is
// shorter).
// openBeneath opens rel beneath the directory rfd as openat2 does with
// how, a path longer than the kernel takes in one call (PATH_MAX) too: a
// server can nest directories past it, and a file there must be hashed
// like any other. The directories on the way are opened a stretch at a
// time, each beneath the last, with how's resolve flags.
func openBeneath(rfd int, rel string, how *unix.OpenHow) (int, error) {
	rel = strings.TrimPrefix(rel, "/")
	dir := rfd
	defer func() {
		if dir != rfd {
			unix.Close(dir)
		}
	}()
	for len(rel) > maxPathStretch {
		cut := strings.LastIndexByte(rel[:maxPathStretch], '/')
		if cut <= 0 {
			return -1, fmt.Errorf("opening %.40s...: %w", rel, unix.ENAMETOOLONG)
		}
		next, err := unix.Openat2(dir, rel[:cut], &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: how.Resolve})
		if err != nil {
			return -1, err
		}
		if dir != rfd {
			unix.Close(dir)
		}
		dir, rel = next, rel[cut+1:]
	}
	return unix.Openat2(dir, rel, how)
}

// maxPathStretch is the longest path openBeneath hands the kernel at
// once: under PATH_MAX (4096), with room for a name (255) at the end.
const maxPathStretch = 2048

func hashBeneath(root, rel string, max, prefixLen int64) (string, string, error) {
	sum, prefix, _, err := hashLines(root, rel, max, prefixLen, 0, maphash.Seed{})
	return sum, prefix, err
}

// hashLines is hashBeneath that also returns, for a text file of at most
// lineBound bytes (0: none), the hashes of its lines keyed by seed (see
// lineHashes); nil otherwise.
func hashLines(root, rel string, max, prefixLen, lineBound int64, seed maphash.Seed) (string, string, *lineSet, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", nil, fmt.Errorf("opening %s: %w", root, err)
	}
	defer unix.Close(rfd)
	how := unix.OpenHow{
		// O_NOATIME: a read of ours must not show in the atime the server
		// can stat (it would tell when snapshots are taken). Only the
		// owner or root may ask for it: without, the open is tried again.
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOATIME,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	fd, err := openBeneath(rfd, rel, &how)
	if errors.Is(err, unix.EPERM) {
		how.Flags &^= unix.O_NOATIME
		fd, err = openBeneath(rfd, rel, &how)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("opening %s beneath %s: %w", rel, root, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return "", "", nil, fmt.Errorf("%s is not a regular file within the bound", rel)
	}
	// A small file is read whole first, for its lines; the same bytes
	// are then hashed.
	var head []byte
	if lineBound > 0 && fi.Size() <= lineBound {
		if head, err = io.ReadAll(io.LimitReader(f, lineBound+1)); err != nil {
			return "", "", nil, err
		}
	}
	r := io.MultiReader(bytes.NewReader(head), f)
	h := sha256.New()
	prefix := ""
	var read int64
	if prefixLen >= 0 && prefixLen <= fi.Size() {
		n, err := copyN(h, r, prefixLen)
		if err != nil && !errors.Is(err, io.EOF) {
			return "", "", nil, err
		}
		read += n
		prefix = hexSum(h)
	}
	n, err := copyN(h, r, max+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", "", nil, err
	}
	read += n
	var lines *lineSet
	if head != nil && int64(len(head)) <= lineBound && read == int64(len(head)) {
		// The whole file was the head: it did not grow while read.
		lines = lineHashes(seed, head)
	}
	return hexSum(h), prefix, lines, nil
}

// copyBufs are the buffers files are hashed through: io.CopyN makes one
// of 32 KiB a call, which for a flood of small files is gigabytes of
// garbage a snapshot.
var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// copyN is io.CopyN through a buffer of copyBufs.
func copyN(dst io.Writer, src io.Reader, n int64) (int64, error) {
	buf := copyBufs.Get().(*[32 << 10]byte)
	defer copyBufs.Put(buf)
	written, err := io.CopyBuffer(dst, io.LimitReader(src, n), buf[:])
	if written == n {
		return n, nil
	}
	if written < n && err == nil {
		err = io.EOF // src stopped early: as io.CopyN says it
	}
	return written, err
}

// emptySum is the sha256 of nothing, in hex.
const emptySum = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// hexSum is h's sum in hex; the sum of nothing is one string for every
// empty file (a flood of them costs no string each).
func hexSum(h hash.Hash) string {
	var b [sha256.Size]byte
	if s := hex.EncodeToString(h.Sum(b[:0])); s != emptySum {
		return s
	}
	return emptySum
}
