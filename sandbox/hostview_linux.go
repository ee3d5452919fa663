//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// hostView observes, from the host, the places a container can write that
// its overlay does not hold (see docs/effects.md "Writable places"): the tmpfs at
// /dev (writable by uid 0 only), /dev/shm, the mqueue mount at /dev/mqueue,
// the files the engine binds at /etc/hosts, /etc/hostname and
// /etc/resolv.conf (uid 0 only), and the System V IPC objects of the
// container's IPC namespace. Each is held open from the start (a
// directory, a file, the namespace), so that it can still be read once
// the container's processes are gone, at teardown: the descriptor keeps
// the tmpfs, the mount and the namespace alive until Close.
type hostView struct {
	lim   overlay.Limits
	trees []*overlay.Tree
	dirs  []*os.File // the trees' directories, held open
	files []heldFile
	ipc   int // the container's IPC namespace, or -1
	// mounts are the paths below /dev that were mount points when the
	// view was opened: read as trees of their own, or not at all (/dev/pts:
	// a pty lives only while a process holds it), never as part of /dev,
	// where the directory under the mount would show once it is gone.
	mounts []string
	// base is each held file's state at the first snapshot: what the
	// engine wrote.
	base map[string]*overlay.Entry
}

type heldFile struct {
	at string
	f  *os.File
}

// viewedDirs are the container's own writable mounts below /dev, read as
// trees; /dev itself is read without what is mounted below it.
var viewedDirs = []struct {
	at    string
	oneFS bool
	magic int64 // the filesystem it must be
}{
	{"/dev", true, unix.TMPFS_MAGIC},
	{overlay.ShmDir, false, unix.TMPFS_MAGIC},
	{overlay.MqueueDir, false, mqueueMagic},
}

// mqueueMagic is the mqueue filesystem's statfs type.
const mqueueMagic = 0x19800202

// openHostView opens what the view reads, in the container whose PID 1 is
// pid on the host; id names the container, to check that pid is its own.
// volumes are the container paths of the engine's other writable mounts
// (an image's VOLUME), read as trees whose first snapshot is the baseline.
func openHostView(id string, pid int, lim overlay.Limits, volumes []string) (_ *hostView, err error) {
	if pid <= 0 {
		return nil, errors.New("the container has no running process")
	}
	v := &hostView{lim: lim, ipc: -1, base: map[string]*overlay.Entry{}}
	defer func() {
		if err != nil {
			v.close()
		}
	}()
	// No pid or id in the errors: they become problems in the report.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the container's init: %w", err)
	}
	defer unix.Close(pidfd)
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || !bytes.Contains(cg, []byte(id)) {
		return nil, errors.New("the container's init is not on this host (a remote engine?)")
	}
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the container's root: %w", err)
	}
	defer unix.Close(root)
	var rootSt unix.Stat_t
	if err := unix.Fstat(root, &rootSt); err != nil {
		return nil, fmt.Errorf("reading the container's root: %w", err)
	}
	// Resolved in the container's root, never outside it; the engine's
	// own places with no link at all.
	const inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	in := func(p string, flags int, resolve uint64) (*os.File, error) {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: uint64(flags | unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: resolve})
		if err != nil {
			return nil, fmt.Errorf("opening %s in the container: %w", p, err)
		}
		return os.NewFile(uintptr(fd), p), nil
	}
	for _, d := range viewedDirs {
		f, err := in(d.at, unix.O_DIRECTORY, inRoot|unix.RESOLVE_NO_SYMLINKS)
		if err != nil {
			return nil, err
		}
		var fs unix.Statfs_t
		if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil || fs.Type != d.magic {
			f.Close()
			return nil, fmt.Errorf("%s in the container is not the mount the engine makes (type %#x)", d.at, fs.Type)
		}
		v.dirs = append(v.dirs, f)
		if d.oneFS {
			v.mounts = append(v.mounts, mountsBelow(f, d.at)...)
		}
		v.trees = append(v.trees, &overlay.Tree{Root: fmt.Sprintf("/proc/self/fd/%d/.", f.Fd()), At: d.at, Limits: lim, OneFS: d.oneFS})
	}
	for _, p := range volumes {
		// As the engine mounted it: links in the image's path followed,
		// inside the container's root.
		f, err := in(p, unix.O_DIRECTORY, inRoot)
		if err != nil {
			return nil, err
		}
		v.dirs = append(v.dirs, f)
		v.trees = append(v.trees, &overlay.Tree{Root: fmt.Sprintf("/proc/self/fd/%d/.", f.Fd()), At: p, Limits: lim, OneFS: true})
	}
	for _, p := range boundFiles {
		f, err := in(p, 0, inRoot|unix.RESOLVE_NO_SYMLINKS)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Dev == rootSt.Dev {
			f.Close() // in the overlay: the upper dir shows its changes
			continue
		}
		v.files = append(v.files, heldFile{at: p, f: f})
	}
	if v.ipc, err = unix.Open(fmt.Sprintf("/proc/%d/ns/ipc", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("opening the container's IPC namespace: %w", err)
	}
	// The pid is still the container's: what was opened is its.
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return nil, fmt.Errorf("the container's init ended while its mounts were opened: %w", err)
	}
	return v, nil
}

// mountsBelow lists the entries of dir (seen at at) that are mount points.
func mountsBelow(dir *os.File, at string) []string {
	var st unix.Stat_t
	if unix.Fstat(int(dir.Fd()), &st) != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Seek(0, io.SeekStart)
	var out []string
	for _, n := range names {
		var c unix.Stat_t
		if unix.Fstatat(int(dir.Fd()), n, &c, unix.AT_SYMLINK_NOFOLLOW) == nil && c.Dev != st.Dev {
			out = append(out, at+"/"+n)
		}
	}
	return out
}

// Snapshot reads every place once; the snapshot holds the entries at their
// container paths.
func (v *hostView) Snapshot(ctx context.Context, deadline time.Time) (overlay.Snapshot, error) {
	snap := overlay.Snapshot{Entries: map[string]overlay.Entry{}}
	var errs []error
	// Each part answers for the paths under it (the longest match: /dev
	// holds /dev/shm, which answers for itself) whether its walk reached
	// them; the held files are always read whole.
	type part struct {
		at      string
		reached func(string) bool
	}
	var parts []part
	add := func(at string, s overlay.Snapshot, err error) {
		for p, e := range s.Entries {
			snap.Entries[p] = e
		}
		snap.Count += s.Count
		snap.Bytes += s.Bytes
		snap.Truncated = snap.Truncated || s.Truncated
		snap.PastDeadline = snap.PastDeadline || s.PastDeadline
		snap.Unhashed = append(snap.Unhashed, s.Unhashed...)
		parts = append(parts, part{at, s.Reached})
		errs = append(errs, err)
	}
	for _, t := range v.trees {
		s, err := t.SnapshotUntil(ctx, deadline)
		if t.At == "/dev" {
			for p := range s.Entries {
				for _, m := range v.mounts {
					if within(p, m) {
						delete(s.Entries, p)
					}
				}
			}
		}
		if t.At == overlay.MqueueDir {
			// Reading a queue's file (its QSIZE line, for the hash) sets
			// its ctime: ours, not the server's.
			for p, e := range s.Entries {
				e.Ctime = 0
				s.Entries[p] = e
			}
		}
		add(t.At, s, err)
	}
	for _, h := range v.files {
		e, err := v.fileEntry(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		snap.Entries[h.at] = e
		snap.Count++
	}
	sysv, err := v.sysv(deadline)
	add(overlay.SysvIPCDir, sysv, err)
	if snap.Truncated {
		snap.Covers = func(p string) bool {
			best := -1
			for i, pt := range parts {
				if within(p, pt.at) && (best < 0 || len(pt.at) > len(parts[best].at)) {
					best = i
				}
			}
			return best < 0 || parts[best].reached(p)
		}
	}
	return snap, errors.Join(errs...)
}

// owns says whether p is one of the view's paths.
func (v *hostView) owns(p string) bool {
	if within(p, overlay.SysvIPCDir) {
		return true
	}
	for _, t := range v.trees {
		if within(p, t.At) {
			return true
		}
	}
	for _, h := range v.files {
		if p == h.at {
			return true
		}
	}
	return false
}

// fileEntry is a held file's state, as a change to the engine's file.
func (v *hostView) fileEntry(h heldFile) (overlay.Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.f.Fd()), &st); err != nil {
		return overlay.Entry{}, fmt.Errorf("stat %s: %w", h.at, err)
	}
	lim := v.lim.WithDefaults()
	// No ctime: the engine's archive calls (--changes api) change it
	// without writing a byte; the content is compared instead.
	e := overlay.Entry{Kind: overlay.Changed, Type: overlay.File, Mode: os.FileMode(st.Mode & 0o777), UID: int(st.Uid), GID: int(st.Gid),
		Size: st.Size, ModTime: st.Mtim.Nano()}
	if st.Size <= lim.MaxHashBytes {
		h256 := sha256.New()
		if _, err := io.Copy(h256, io.NewSectionReader(h.f, 0, lim.MaxHashBytes+1)); err != nil {
			return e, fmt.Errorf("reading %s: %w", h.at, err)
		}
		e.SHA256 = hex.EncodeToString(h256.Sum(nil))
	}
	if v.base[h.at] == nil {
		b := e
		v.base[h.at] = &b
	}
	e.Before = v.base[h.at]
	return e, nil
}

func (v *hostView) close() {
	for _, f := range v.dirs {
		f.Close()
	}
	for _, h := range v.files {
		h.f.Close()
	}
	v.dirs, v.files = nil, nil
	if v.ipc >= 0 {
		unix.Close(v.ipc)
		v.ipc = -1
	}
}

// sysv lists the System V IPC objects of the container's IPC namespace,
// from a thread that enters it and comes back (a thread left in it would
// exit with its goroutine: it never runs anything else).
func (v *hostView) sysv(deadline time.Time) (overlay.Snapshot, error) {
	snap := overlay.Snapshot{Entries: map[string]overlay.Entry{}}
	if v.ipc < 0 {
		return snap, nil
	}
	type result struct {
		snap overlay.Snapshot
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{snap, fmt.Errorf("opening our IPC namespace: %w", err)}
			return
		}
		defer unix.Close(self)
		if err := unix.Setns(v.ipc, unix.CLONE_NEWIPC); err != nil {
			runtime.UnlockOSThread()
			ch <- result{snap, fmt.Errorf("entering the container's IPC namespace: %w", err)}
			return
		}
		err = readSysv(&snap, v.lim.WithDefaults(), sysvHashBudget, deadline)
		if back := unix.Setns(self, unix.CLONE_NEWIPC); back != nil {
			ch <- result{snap, errors.Join(err, fmt.Errorf("returning from the container's IPC namespace: %w", back))}
			return // still locked: the thread ends with the goroutine
		}
		runtime.UnlockOSThread()
		ch <- result{snap, err}
	}()
	r := <-ch
	return r.snap, r.err
}

// sysvHashBudget bounds the bytes of shared memory segments and messages
// read in one snapshot; past it objects are listed without a hash and the
// snapshot is marked truncated.
const sysvHashBudget = 256 << 20

// System V message flags the unix package does not name.
const (
	msgNoError = 0o10000
	msgCopy    = 0o40000 // read a message by index, leaving it queued
	semGetAll  = 13
)

// readSysv reads /proc/sysvipc (the calling thread's IPC namespace's) into
// snap, and each object's content: a segment's bytes, a queue's messages,
// a semaphore set's values, reading at most budget bytes. Past a bound it
// says which paths it reached (Covers): the objects it entered, and those
// the tables show absent; an object it could not hash within the budget
// is left out, not reported with a hash it did not get.
func readSysv(snap *overlay.Snapshot, lim overlay.Limits, budget int64, deadline time.Time) error {
	var errs []error
	read := map[string]bool{} // the kinds whose table was read
	type object struct {
		kind, path string
		id         int64
		r          row
	}
	var objects []object
	for _, kind := range []string{"shm", "msg", "sem"} {
		rows, err := procTable("/proc/sysvipc/" + kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		read[kind] = true
		for _, r := range rows {
			id := r.int(kind + "id")
			if kind == "msg" {
				id = r.int("msqid")
			}
			p := fmt.Sprintf("%s/%s/%d", overlay.SysvIPCDir, kind, id)
			objects = append(objects, object{kind, p, id, r})
		}
	}
	left := map[string]bool{} // listed, but not entered
	for i, o := range objects {
		snap.Count++
		if snap.Count > lim.MaxEntries {
			snap.Truncated = true
			for _, rest := range objects[i:] {
				left[rest.path] = true
			}
			break
		}
		r := o.r
		perm, _ := strconv.ParseUint(r["perms"], 8, 32)
		e := overlay.Entry{Kind: overlay.Added, Type: overlay.Other, Mode: os.FileMode(perm & 0o777),
			UID: int(r.int("uid")), GID: int(r.int("gid")), Ctime: r.int("ctime") * 1e9}
		var need int64 // bytes hashed
		switch o.kind {
		case "shm":
			e.Type, e.Size = overlay.File, r.int("size")
			snap.Bytes += e.Size
			if e.Size <= lim.MaxHashBytes {
				need = e.Size // a segment of zeros is not read, but hashing it costs
			}
		case "msg":
			e.Size = r.int("cbytes")
			need = e.Size
		case "sem":
			e.Size = r.int("nsems")
			need = 2 * e.Size // two bytes a value
		}
		if need > 0 && overlay.Passed(deadline) {
			// Past the run's deadline: listed, not read.
			e.Unhashed = true
			snap.Unhashed = append(snap.Unhashed, o.path)
			snap.Entries[o.path] = e
			continue
		}
		if need > budget {
			snap.Truncated = true
			left[o.path] = true
			continue
		}
		budget -= need
		switch o.kind {
		case "shm":
			if e.Size <= lim.MaxHashBytes {
				// A segment with no resident page is all zeros: hashed
				// without reading it, which would allocate its pages.
				e.SHA256 = shmHash(int(o.id), e.Size, r.int("rss") == 0)
			}
		case "msg":
			e.SHA256 = msgHash(int(o.id), r.int("qnum"))
		case "sem":
			e.SHA256 = semHash(int(o.id), int(e.Size))
		}
		snap.Entries[o.path] = e
	}
	if snap.Truncated {
		snap.Covers = func(p string) bool {
			rest, ok := strings.CutPrefix(p, overlay.SysvIPCDir+"/")
			kind, _, _ := strings.Cut(rest, "/")
			return ok && read[kind] && !left[p] // entered, or shown absent
		}
	}
	return errors.Join(errs...)
}

// row is one line of a /proc/sysvipc table, by column name.
type row map[string]string

func (r row) int(col string) int64 {
	n, _ := strconv.ParseInt(r[col], 10, 64)
	return n
}

func procTable(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var head []string
	var rows []row
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if head == nil {
			head = fields
			continue
		}
		r := row{}
		for i, f := range fields {
			if i < len(head) {
				r[head[i]] = f
			}
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// shmHash hashes a segment's bytes, attached read-only, or size zeros.
func shmHash(id int, size int64, zeros bool) string {
	h := sha256.New()
	if zeros {
		zero := make([]byte, 64<<10)
		for n := size; n > 0; n -= int64(len(zero)) {
			h.Write(zero[:min(n, int64(len(zero)))])
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
	if err != nil {
		return ""
	}
	defer unix.SysvShmDetach(b)
	h.Write(b[:min(int64(len(b)), size)])
	return hex.EncodeToString(h.Sum(nil))
}

// msgHash hashes a queue's messages in order, type and bytes, read by
// index without taking them off the queue (MSG_COPY); a queue holds at
// most msgmnb bytes (16 KiB unless raised, which needs a capability).
func msgHash(id int, qnum int64) string {
	h := sha256.New()
	buf := make([]byte, 8+64<<10)
	for i := int64(0); i < qnum; i++ {
		n, _, errno := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)-8),
			uintptr(i), unix.IPC_NOWAIT|msgCopy|msgNoError, 0)
		if errno == unix.ENOMSG {
			break // taken since the table was read
		}
		if errno != 0 {
			return ""
		}
		var hdr [16]byte
		copy(hdr[:8], buf[:8])
		binary.LittleEndian.PutUint64(hdr[8:], uint64(n))
		h.Write(hdr[:])
		h.Write(buf[8 : 8+n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// semHash hashes a semaphore set's values.
func semHash(id, nsems int) string {
	if nsems <= 0 {
		return ""
	}
	vals := make([]uint16, nsems)
	if _, _, errno := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, semGetAll, uintptr(unsafe.Pointer(&vals[0])), 0, 0); errno != 0 {
		return ""
	}
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, vals)
	return hex.EncodeToString(h.Sum(nil))
}
