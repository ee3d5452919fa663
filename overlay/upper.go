//go:build linux

package overlay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hashed remembers a file's hash with what would change if it were written.
type hashed struct {
	ino, size, mtime, ctime int64
	sum                     string
	prefix                  string // hash of the first prefixLen bytes
	prefixLen               int64
}

// Snapshot walks the upper dir once.
func (u *UpperDir) Snapshot(ctx context.Context) (Snapshot, error) {
	lim := u.Limits.withDefaults()
	if u.hashes == nil {
		u.hashes, u.lower = map[string]hashed{}, map[string]*Entry{}
	}
	snap := Snapshot{Entries: map[string]Entry{}}
	seen := map[string]bool{}
	var opaque []string // opaque directories of the upper dir, seen so far
	last := ""
	err := walkFirst(u.Upper, lim.First, func(n node) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		snap.Count++
		if snap.Count > lim.MaxEntries {
			snap.Truncated = true
			first := lim.First
			snap.Covers = func(p string) bool { return walkedBefore(first, p, last) }
			return errSkipAll
		}
		last = n.rel
		rel := n.rel
		info := statInfo{name: rel, st: n.st}
		e := Entry{Type: TypeOf(info.Mode()), Mode: info.Mode(), Size: info.Size(), ModTime: n.st.Mtim.Nano(),
			UID: int(n.st.Uid), GID: int(n.st.Gid), Ctime: n.st.Ctim.Nano()}
		hidden := underAny(rel, opaque)
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
				opaque = append(opaque, rel)
			}
		case Symlink:
			if e.Kind != Removed {
				e.Link = n.link
			}
		case File:
			if e.Kind != Removed {
				snap.Bytes += e.Size
				e.SHA256, e.PrefixSHA256 = u.hash(rel, n.st, lim, e.Before)
			}
		}
		seen[rel] = true
		snap.Entries[rel] = e
		return nil
	})
	if err != nil {
		return snap, err
	}
	for p := range u.hashes {
		if !seen[p] {
			delete(u.hashes, p)
		}
	}
	return snap, nil
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

// hash returns the sha256 of a regular upper file within the size bound,
// and of its first n bytes, where n is the size it had when last seen (in
// an earlier snapshot, or in the image): equal to the old hash, the file
// was only appended to. Hashes are reused while inode, size and times are
// unchanged.
func (u *UpperDir) hash(rel string, st unix.Stat_t, lim Limits, before *Entry) (string, string) {
	if st.Size > lim.MaxHashBytes {
		return "", ""
	}
	key := hashed{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	h, seen := u.hashes[rel]
	if seen && h.ino == key.ino && h.size == key.size && h.mtime == key.mtime && h.ctime == key.ctime {
		return h.sum, h.prefix
	}
	key.prefixLen = -1
	switch {
	case seen:
		key.prefixLen = h.size
	case before != nil && before.Type == File:
		key.prefixLen = before.Size
	}
	sum, prefix, err := hashBeneath(u.Upper, rel, lim.MaxHashBytes, key.prefixLen)
	if err != nil {
		return "", ""
	}
	key.sum, key.prefix = sum, prefix
	u.hashes[rel] = key
	return sum, prefix
}

// lookupLower finds a path in the lower dirs, top first, honouring
// whiteouts and opaque directories, one component at a time.
func (u *UpperDir) lookupLower(p string, lim Limits) *Entry {
	if e, ok := u.lower[p]; ok {
		return e
	}
	e := lookupLayers(u.Lowers, p, lim)
	u.lower[p] = e
	return e
}

func lookupLayers(lowers []string, p string, lim Limits) *Entry {
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
				return lowerEntry(root, p, info, lim)
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

func lowerEntry(root, p string, info fs.FileInfo, lim Limits) *Entry {
	e := &Entry{Type: TypeOf(info.Mode()), Mode: info.Mode(), Size: info.Size(), ModTime: info.ModTime().UnixNano()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = int(st.Uid), int(st.Gid)
	}
	switch e.Type {
	case File:
		if e.Size <= lim.MaxHashBytes {
			e.SHA256, _, _ = hashBeneath(root, p, lim.MaxHashBytes, -1)
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
func hashBeneath(root, rel string, max, prefixLen int64) (string, string, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", fmt.Errorf("opening %s: %w", root, err)
	}
	defer unix.Close(rfd)
	fd, err := unix.Openat2(rfd, strings.TrimPrefix(rel, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return "", "", fmt.Errorf("opening %s beneath %s: %w", rel, root, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return "", "", fmt.Errorf("%s is not a regular file within the bound", rel)
	}
	h := sha256.New()
	prefix := ""
	if prefixLen >= 0 && prefixLen <= fi.Size() {
		if _, err := io.CopyN(h, f, prefixLen); err != nil && !errors.Is(err, io.EOF) {
			return "", "", err
		}
		prefix = hex.EncodeToString(h.Sum(nil))
	}
	if _, err := io.CopyN(h, f, max+1); err != nil && !errors.Is(err, io.EOF) {
		return "", "", err
	}
	return hex.EncodeToString(h.Sum(nil)), prefix, nil
}
