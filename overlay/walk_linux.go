package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// node is one entry met by walkBeneath.
type node struct {
	rel    string // "/a/b"
	st     unix.Stat_t
	link   string // symlink target
	opaque bool   // an opaque overlayfs directory
	// fd is a directory's, open while fn meets it and before it is read
	// (a journal watches it then); -1 otherwise.
	fd int
}

// errSkipAll stops a walk early.
var errSkipAll = errors.New("skip all")

// walkBeneath walks root depth-first in name order without ever following
// a symlink: each directory is opened relative to its parent's descriptor
// with O_NOFOLLOW, and entries are stat'ed with AT_SYMLINK_NOFOLLOW. A
// directory swapped for a link between listing and opening is skipped,
// not followed (a path-based walk would list whatever the link points at,
// on the host).
func walkBeneath(root string, fn func(n node) error) error {
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", root, err)
	}
	err = walkFD(fd, "", fn)
	if errors.Is(err, errSkipAll) {
		return nil
	}
	return err
}

// errSkipDir, returned by fn for a directory, skips what is below it.
var errSkipDir = errors.New("skip dir")

// walkFirst walks root as walkBeneath does, but the subtrees at first
// (paths like "/workspace", each reached one component at a time, the
// directories on the way met before it) come before the rest, so that a
// bound hit in the rest (a flood in /tmp) leaves them seen. Each node is
// met once.
func walkFirst(root string, first []string, fn func(n node) error) error {
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", root, err)
	}
	defer unix.Close(fd)
	// Only what the walks of first meet is kept to be told again: the
	// rest is met once by the last walk (a flood in /tmp costs no entry
	// here).
	met, done := map[string]bool{}, map[string]bool{}
	keep := true
	once := func(n node) error {
		if met[n.rel] {
			if done[n.rel] {
				return errSkipDir
			}
			return nil
		}
		if keep {
			met[n.rel] = true
		}
		return fn(n)
	}
	for _, p := range first {
		if err := walkPath(fd, p, once); err != nil {
			if errors.Is(err, errSkipAll) {
				return nil
			}
			return err
		}
		done[p] = true
	}
	keep = false
	rest, err := unix.Dup(fd)
	if err != nil {
		return fmt.Errorf("opening %s: %w", root, err)
	}
	err = walkFD(rest, "", once)
	if errors.Is(err, errSkipAll) {
		return nil
	}
	return err
}

// walkedBefore reports whether walkFirst(first) meets p no later than
// last: it walks the subtrees of first in their order, then the rest
// depth-first with names sorted (which is comparing paths component by
// component).
func walkedBefore(first []string, p, last string) bool {
	rank := func(q string) int {
		for i, f := range first {
			if q == f || strings.HasPrefix(q, f+"/") {
				return i
			}
		}
		return len(first)
	}
	// The directories on the way to a subtree of first are met with it.
	for i, f := range first {
		if strings.HasPrefix(f, p+"/") && rank(last) >= i {
			return true
		}
	}
	rp, rl := rank(p), rank(last)
	if rp != rl {
		return rp < rl
	}
	return slices.Compare(strings.Split(p, "/"), strings.Split(last, "/")) <= 0
}

// walkPath meets the directories on the way to p below the directory
// open as root, then p, then walks below p; a component that is missing
// or not a directory ends it (a link is met, never followed).
func walkPath(root int, p string, fn func(n node) error) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	cur, rel := root, ""
	defer func() {
		if cur != root {
			unix.Close(cur)
		}
	}()
	for i, name := range parts {
		n, child, ok, err := meet(cur, rel, name)
		if err != nil || !ok {
			return err
		}
		if err := fn(n); err != nil {
			if child >= 0 {
				unix.Close(child)
			}
			if errors.Is(err, errSkipDir) {
				return nil // walked already, with all below it
			}
			return err
		}
		if child < 0 {
			return nil
		}
		if i == len(parts)-1 {
			return walkFD(child, n.rel, fn)
		}
		if cur != root {
			unix.Close(cur)
		}
		cur, rel = child, n.rel
	}
	return nil
}

// meet stats name in the directory open as fd (at rel) without following
// it; a directory is opened too (child, else -1). ok is false when the
// entry is gone since it was listed.
func meet(fd int, rel, name string) (n node, child int, ok bool, err error) {
	n, child = node{rel: rel + "/" + name, fd: -1}, -1
	if err := unix.Fstatat(fd, name, &n.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return n, -1, false, nil // gone since listed: the next snapshot tells
		}
		return n, -1, false, fmt.Errorf("stat %s: %w", n.rel, err)
	}
	switch n.st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		if k, err := unix.Readlinkat(fd, name, buf); err == nil {
			n.link = string(buf[:k])
		}
	case unix.S_IFDIR:
		child, err = unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			child = -1 // replaced or removed since it was listed
		} else {
			n.opaque = opaqueXattr(func(attr string, buf []byte) (int, error) { return unix.Fgetxattr(child, attr, buf) })
			n.fd = child
		}
	}
	return n, child, true, nil
}

// walkFD walks the directory open as fd (it closes fd).
func walkFD(fd int, rel string, fn func(n node) error) error {
	dir := os.NewFile(uintptr(fd), rel)
	names, err := dir.Readdirnames(-1)
	if err != nil {
		dir.Close()
		if rel != "" && errors.Is(err, unix.ENOENT) {
			// Removed since it was opened (a lock directory a server
			// makes and removes, proper-lockfile's P.lock): it was empty
			// to be removed, as meet treats an entry gone since listed.
			return nil
		}
		return fmt.Errorf("listing %s: %w", orRoot(rel), err)
	}
	sort.Strings(names)
	defer dir.Close()
	for _, name := range names {
		n, child, ok, err := meet(fd, rel, name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := fn(n); err != nil {
			if child >= 0 {
				unix.Close(child)
			}
			if errors.Is(err, errSkipDir) {
				continue
			}
			return err
		}
		if child >= 0 {
			if err := walkFD(child, n.rel, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// opaqueXattr reports an opaque overlayfs directory (one whose lower
// contents are hidden), reading its xattrs with get. Only trusted.* counts:
// Docker mounts overlayfs without userxattr, and the server (an owner
// without CAP_SYS_ADMIN) can set user.overlay.opaque on its own
// directories to forge a deletion of everything below them.
func opaqueXattr(get func(attr string, buf []byte) (int, error)) bool {
	buf := make([]byte, 4)
	n, err := get("trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

func orRoot(rel string) string {
	if rel == "" {
		return "/"
	}
	return rel
}

// statInfo adapts a Stat_t to fs.FileInfo.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s statInfo) Sys() any           { return nil }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	return m
}
