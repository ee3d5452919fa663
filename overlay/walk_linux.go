package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// node is one entry met by walkBeneath.
type node struct {
	rel    string // "/a/b"
	st     unix.Stat_t
	link   string // symlink target
	opaque bool   // an opaque overlayfs directory
}

// errSkipAll stops a walk early; errSkipDir, returned for a directory,
// leaves out what is below it.
var (
	errSkipAll = errors.New("skip all")
	errSkipDir = errors.New("skip dir")
)

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

// walkFD walks the directory open as fd (it closes fd).
func walkFD(fd int, rel string, fn func(n node) error) error {
	dir := os.NewFile(uintptr(fd), rel)
	names, err := dir.Readdirnames(-1)
	if err != nil {
		dir.Close()
		return fmt.Errorf("listing %s: %w", orRoot(rel), err)
	}
	sort.Strings(names)
	defer dir.Close()
	for _, name := range names {
		n := node{rel: rel + "/" + name}
		if err := unix.Fstatat(fd, name, &n.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // gone since listed: the next snapshot tells
			}
			return fmt.Errorf("stat %s: %w", n.rel, err)
		}
		var child = -1
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
			}
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
