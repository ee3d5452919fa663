//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The disk bound. Overlay2 on ext4 has no project quota, so the engine
// cannot cap what a container writes: the runner measures, from the host,
// the space the container holds and kills its init once that passes the
// bound. One measurement sums, each inode once (hard links), the
// allocated blocks (not sizes: a sparse file costs what it allocates) of:
//   - the container's overlay2 layer directory (its upper and work dirs,
//     and the workspace's and package's state dirs, which live in it),
//     not crossing into another file system (its merged mount);
//   - the engine's files for the container that it can write (hosts,
//     hostname, resolv.conf, bind-mounted: writable by a server run as
//     root; not the engine's own state, which it rewrites as it likes);
//   - files deleted while a process of the container still holds them
//     open or mapped (their blocks stay in use, and no walk sees them);
//   - what its /dev/shm tmpfs holds (its size is the bound too).
// See docs/bounds.md ("Overshoot") for the overshoot.

// diskWatch polls one container's disk use.
type diskWatch struct {
	bound    int64
	interval time.Duration
	dirs     []string        // walked, without crossing file systems
	files    []string        // stat'ed
	devs     map[uint64]bool // where a deleted, held file counts
	procs    *heldFiles      // the container's processes
	shm      int             // O_PATH descriptor of the container's /dev/shm, or -1
	pidfd    int             // the container's init, to kill it
	base     int64           // the use before the server started
	// baseClaim is what the files claimed then (their apparent sizes).
	baseClaim int64

	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	peak     int64 // the most measured, over the base
	exceeded bool
	cost     time.Duration // the longest measurement
	polls    int
	err      error // the first measurement error
}

// newDiskWatch prepares the watch of the container whose init is pid (on
// the host): dirs are its layer directory, files the engine's files it
// can write, mounts the container paths whose file systems hold its
// changes. The use measured now is the base the bound counts from.
func newDiskWatch(pid int, bound int64, interval time.Duration, dirs, files, mounts []string) (_ *diskWatch, err error) {
	w := &diskWatch{bound: bound, interval: interval, dirs: dirs, files: files, devs: map[uint64]bool{}, shm: -1, pidfd: -1}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.procs, err = newHeldFiles(pid, mounts...); err != nil {
		return nil, err
	}
	w.devs = w.procs.devs
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return nil, fmt.Errorf("reading %s: %w", d, err)
		}
		w.devs[st.Dev] = true // a deleted file mapped shows the layer's device
	}
	if w.pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
		return nil, fmt.Errorf("opening the container's init (pid %d): %w", pid, err)
	}
	if fd, err := openInRoot(pid, "/dev/shm"); err == nil {
		w.shm = fd
	}
	if w.base, w.baseClaim, err = w.measure(); err != nil {
		return nil, err
	}
	return w, nil
}

// openInRoot opens path, as process pid sees it, O_PATH, following no link.
func openInRoot(pid int, path string) (int, error) {
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	return unix.Openat2(root, strings.TrimLeft(path, "/"), &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}

// start polls until finish; once the use passes the bound, it kills the
// container's init (and with it every process of the container) and
// stops polling. Between measurements, every diskTick, it reads a cheap
// signal: the used blocks of the layer's file system and of /dev/shm
// (two statfs). Once they grew by more than the room left under the
// bound, it measures at once rather than at the next interval, so that a
// fast writer is stopped within a tick or so, not an interval. Others'
// writes on the same file system can only bring a measurement forward
// (its cost, never a finding); others' deletions can hide the growth
// from the signal, not from the next measurement.
func (w *diskWatch) start() {
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		tick := diskTick
		last, gap := time.Now(), w.interval // when the last measurement began; the least wait after it
		signal, room := w.signal(), w.bound
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(tick):
			}
			since := time.Since(last)
			if since < gap && (since < 4*w.cost || w.signal()-signal <= room) {
				continue
			}
			last, signal = time.Now(), w.signal()
			n, over := w.poll()
			if over {
				unix.PidfdSendSignal(w.pidfd, unix.SIGKILL, nil, 0)
				return
			}
			room = w.bound - n
			// A walk costs in proportion to the entries: measuring never takes
			// more than a fifth of a CPU.
			gap = max(w.interval, 4*time.Since(last))
		}
	}()
}

// signal is the used bytes of the layer's file system and of /dev/shm: a
// figure that grows at least as fast as the container's use, unless
// something else on the file system deletes.
func (w *diskWatch) signal() int64 {
	var used int64
	var fs unix.Statfs_t
	if len(w.dirs) > 0 && unix.Statfs(w.dirs[0], &fs) == nil {
		used += int64(fs.Blocks-fs.Bfree) * fs.Bsize
	}
	if w.shm >= 0 && unix.Fstatfs(w.shm, &fs) == nil {
		used += int64(fs.Blocks-fs.Bfree) * fs.Bsize
	}
	return used
}

// poll measures once and records it: the use over the base, and
// whether the bound is passed.
func (w *diskWatch) poll() (int64, bool) {
	began := time.Now()
	n, claim, err := w.measure()
	cost := time.Since(began)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	w.cost = max(w.cost, cost)
	if err != nil && w.err == nil {
		w.err = err
	}
	w.peak = max(w.peak, n-w.base)
	// What the files claim counts as what they hold: a sparse file of a
	// TiB costs a block here and a TiB to whatever reads or applies it.
	if n-w.base > w.bound || claim-w.baseClaim > w.bound {
		w.exceeded = true
	}
	return n - w.base, w.exceeded
}

// diskResult is what a watch saw.
type diskResult struct {
	Exceeded bool
	Peak     int64         // bytes over the base, the most measured
	Cost     time.Duration // the longest measurement
	Polls    int
	Err      error
}

// finish stops polling and measures once more (the server stopped: what
// it wrote since the last poll counts too), then lets go of everything.
func (w *diskWatch) finish(last bool) diskResult {
	if w.stop != nil {
		close(w.stop)
		<-w.done
		w.stop = nil
	}
	if last {
		w.poll()
	}
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return diskResult{Exceeded: w.exceeded, Peak: w.peak, Cost: w.cost, Polls: w.polls, Err: w.err}
}

// stopped says whether the watch killed the container.
func (w *diskWatch) stopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exceeded
}

func (w *diskWatch) close() {
	for _, fd := range []*int{&w.shm, &w.pidfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// measure is the space the container holds now, in bytes, and what its
// files claim (the apparent sizes of the regular files walked and held
// deleted). A part that cannot be read (a process that ended, a file
// removed during the walk) is skipped; the error names the first failure
// that is not a race.
func (w *diskWatch) measure() (held, claimed int64, err error) {
	u := diskUsage{seen: map[[2]uint64]bool{}}
	var errs []error
	for _, d := range w.dirs {
		if err := u.walk(d); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range w.files {
		var st unix.Stat_t
		if unix.Lstat(f, &st) == nil {
			u.add(&st)
		}
	}
	if w.procs != nil {
		u.heldDeleted(w.procs, w.devs)
	}
	if w.shm >= 0 {
		var fs unix.Statfs_t
		if err := unix.Fstatfs(w.shm, &fs); err == nil {
			u.total += int64(fs.Blocks-fs.Bfree) * fs.Bsize
		}
	}
	return u.total, u.apparent, errors.Join(errs...)
}

// diskUsage sums allocated blocks, and the regular files' apparent
// sizes, each inode once.
type diskUsage struct {
	seen     map[[2]uint64]bool
	total    int64
	apparent int64
	entries  int
}

func (u *diskUsage) add(st *unix.Stat_t) {
	k := [2]uint64{st.Dev, st.Ino}
	if u.seen[k] {
		return
	}
	u.seen[k] = true
	u.total += st.Blocks * 512
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		u.apparent += st.Size
	}
}

// walk adds dir and everything below it on its file system; nothing is
// followed (a link is counted as itself).
func (u *diskUsage) walk(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if gone(err) {
			return nil
		}
		return fmt.Errorf("measuring %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("measuring %s: %w", dir, err)
	}
	u.add(&st)
	u.walkFD(fd, st.Dev)
	return nil
}

// walkFD adds the entries of the directory open at fd (which it closes)
// that are on device dev, descending into directories.
func (u *diskUsage) walkFD(fd int, dev uint64) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			u.entries++
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != dev {
				continue // gone since listed, or a mount point (merged, shm)
			}
			u.add(&st)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
					u.walkFD(sub, dev)
				}
			}
		}
		if err != nil || len(names) == 0 {
			return
		}
	}
}

// heldDeleted adds the regular files on devs that a process of the
// container holds open or mapped after their last name was removed.
func (u *diskUsage) heldDeleted(procs *heldFiles, devs map[uint64]bool) {
	pids, err := procs.pids()
	if err != nil {
		return
	}
	count := func(link string) {
		var st unix.Stat_t
		if unix.Stat(link, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 0 && devs[st.Dev] {
			u.add(&st)
		}
	}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/", pid)
		if fds, err := os.ReadDir(dir + "fd"); err == nil {
			for _, fd := range fds {
				link := dir + "fd/" + fd.Name()
				if t, err := os.Readlink(link); err == nil && strings.HasSuffix(t, " (deleted)") {
					count(link)
				}
			}
		}
		f, err := os.Open(dir + "maps")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasSuffix(line, " (deleted)") {
				continue
			}
			if rng, _, ok := strings.Cut(line, " "); ok {
				count(dir + "map_files/" + rng)
			}
		}
		f.Close()
	}
}
