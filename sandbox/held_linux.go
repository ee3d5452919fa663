//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// heldFiles finds, from the host, the files the container's processes can
// change without changing their stat: files mapped shared (a write through
// a page already dirty updates neither mtime nor ctime until writeback)
// and files open for writing. Processes are found by walking the
// children of the container's init (/proc/PID/task/TID/children): an
// orphan is reparented to it, so no process of the container is outside
// the tree, and the walk costs a read per task.
type heldFiles struct {
	pid1  int    // the container's init, as the host sees it
	pidns uint64 // its pid namespace's inode: a pid reused by another process is refused
	devs  map[uint64]bool
	// maxEntries bounds the descriptors and mappings one look examines
	// (default maxHeldEntries): a server may open a million descriptors.
	// Past it the look is unplaced, and the snapshot verifies every file.
	maxEntries int
}

// maxHeldEntries is the default bound on what one look examines; each
// costs a few system calls (about 10 µs).
const maxHeldEntries = 65536

// held is what one look found: the container paths of the held files it
// could place, and whether some held file could not be placed (a name
// deleted while another link remains, a rename racing the look).
type held struct {
	paths    map[string]bool
	unplaced bool
}

func (h held) union(o held) held {
	out := held{paths: map[string]bool{}, unplaced: h.unplaced || o.unplaced}
	for p := range h.paths {
		out.paths[p] = true
	}
	for p := range o.paths {
		out.paths[p] = true
	}
	return out
}

// maxHeldRounds bounds the rereads of the process tree: a process forked
// while the tree was read is looked at in the next round.
const maxHeldRounds = 3

// newHeldFiles starts from the container's init; mounts are the paths in
// the container whose file systems hold the server's changes (the root's
// overlay and the workspace's): a held file elsewhere (a tmpfs, a pipe) is
// not in an upper dir.
func newHeldFiles(pid1 int, mounts ...string) (*heldFiles, error) {
	h := &heldFiles{pid1: pid1, devs: map[uint64]bool{}, maxEntries: maxHeldEntries}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid1), &st); err != nil {
		return nil, fmt.Errorf("reading the container's pid namespace: %w", err)
	}
	h.pidns = st.Ino
	for _, m := range mounts {
		if err := statInRoot(pid1, m, &st); err != nil {
			return nil, fmt.Errorf("reading %s in the container: %w", m, err)
		}
		h.devs[st.Dev] = true
	}
	return h, nil
}

// statInRoot stats path as process pid sees it, resolved inside its root
// and following no link (a link could lead out of the container).
func statInRoot(pid int, path string, st *unix.Stat_t) error {
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	rel := strings.TrimLeft(path, "/")
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, st)
}

// look finds the held files now. A process that ends during the look is
// skipped (what it held is released); an error leaves the look
// unplaced, so that the caller verifies everything.
func (h *heldFiles) look() (held, error) {
	out := held{paths: map[string]bool{}}
	seen := map[int]bool{}
	budget := h.maxEntries
	var errs []error
	for round := 0; round < maxHeldRounds; round++ {
		pids, err := h.pids()
		if err != nil {
			return held{unplaced: true}, err
		}
		fresh := 0
		for _, pid := range pids {
			if seen[pid] {
				continue
			}
			seen[pid], fresh = true, fresh+1
			if err := h.process(pid, &out, &budget); err != nil && !gone(err) {
				errs = append(errs, fmt.Errorf("process %d: %w", pid, err))
			}
		}
		if fresh == 0 {
			break
		}
	}
	if len(errs) > 0 {
		out.unplaced = true
	}
	return out, errors.Join(errs...)
}

// gone says that an error means the process (or the descriptor) went away.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT)
}

// pids lists the container's processes: init and its descendants, each
// checked to be in init's pid namespace.
func (h *heldFiles) pids() ([]int, error) {
	out := []int{}
	seen := map[int]bool{}
	queue := []int{h.pid1}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid), &st); err != nil {
			if pid == h.pid1 && !gone(err) {
				return nil, fmt.Errorf("the container's init: %w", err)
			}
			continue // ended (init too: the container has stopped, nothing is held)
		}
		if st.Ino != h.pidns {
			continue // not the container's: the pid was reused
		}
		out = append(out, pid)
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out, nil
}

// candidate is one held file: its identity as the process sees it, and the
// path its magic link names.
type candidate struct {
	link  string // /proc/PID/map_files/... or /proc/PID/fd/N
	dev   uint64
	ino   uint64
	nlink uint64
}

// process adds what pid holds: its shared file mappings (one address
// space for all its threads) and the files its descriptor tables (one
// per thread that does not share its process's) hold open for writing.
func (h *heldFiles) process(pid int, out *held, budget *int) error {
	var cands []candidate
	spend := func(n int) bool {
		*budget -= n
		if *budget < 0 {
			out.unplaced = true // past the bound: every file is verified
			return false
		}
		return true
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	maps, err := overlay.ParseSharedMappings(f)
	f.Close()
	if err != nil {
		return err
	}
	if !spend(len(maps)) {
		return nil
	}
	for _, m := range maps {
		if !h.devs[unix.Mkdev(m.Major, m.Minor)] {
			continue // not on an overlay of ours: a tmpfs, shared memory
		}
		c := candidate{link: fmt.Sprintf("/proc/%d/map_files/%s", pid, m.MapFilesName())}
		if h.identify(&c) {
			cands = append(cands, c)
		}
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if tid != pid && sameFiles(pid, tid) {
			continue
		}
		dir := fmt.Sprintf("/proc/%d/task/%d", pid, tid)
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			if gone(err) {
				continue
			}
			return err
		}
		if !spend(len(fds)) {
			return nil
		}
		for _, fd := range fds {
			link := dir + "/fd/" + fd.Name()
			target, err := os.Readlink(link)
			if err != nil || !strings.HasPrefix(target, "/") {
				continue // closed since listed, or a pipe, a socket, an anon inode
			}
			fi, err := os.Open(dir + "/fdinfo/" + fd.Name())
			if err != nil {
				continue
			}
			w, err := overlay.ParseFdinfoWritable(fi)
			fi.Close()
			if err != nil || !w {
				continue
			}
			c := candidate{link: link}
			if h.identify(&c) {
				cands = append(cands, c)
			}
		}
	}
	for _, c := range cands {
		h.place(pid, c, out)
	}
	return nil
}

// identify stats the file behind a magic link; false when it is not a
// regular file on one of our overlays, or is gone.
func (h *heldFiles) identify(c *candidate) bool {
	var st unix.Stat_t
	if err := unix.Stat(c.link, &st); err != nil {
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || !h.devs[st.Dev] {
		return false
	}
	c.dev, c.ino, c.nlink = st.Dev, st.Ino, uint64(st.Nlink)
	return true
}

// place finds the held file's path in the container: the path its link
// names, confirmed by looking it up in the process's root and comparing
// device and inode. A file with no name left (deleted, nlink 0) cannot be
// seen in any snapshot and is skipped; one that cannot be placed makes
// the look unplaced.
func (h *heldFiles) place(pid int, c candidate, out *held) {
	if c.nlink == 0 {
		return
	}
	for try := 0; try < 2; try++ { // a rename between the two reads: once more
		p, err := os.Readlink(c.link)
		if err != nil {
			return // released since
		}
		var st unix.Stat_t
		if strings.HasPrefix(p, "/") && statInRoot(pid, p, &st) == nil && st.Dev == c.dev && st.Ino == c.ino {
			out.paths[p] = true
			return
		}
	}
	out.unplaced = true
}

// kcmpFiles is KCMP_FILES: do two tasks share one descriptor table.
const kcmpFiles = 2

// sameFiles says whether thread tid shares pid's descriptor table (a
// thread made without CLONE_FILES has its own).
func sameFiles(pid, tid int) bool {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(tid), kcmpFiles, 0, 0, 0)
	return errno == 0 && r == 0
}
