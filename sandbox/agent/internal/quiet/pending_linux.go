//go:build linux

package quiet

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Pending reads every task of the proc file system at opts.Root but the
// processes of opts.Self, twice, and returns what can still act without
// outside input: none, and the sandbox is quiet. The error is for a root
// that does not list; anything of a task that does not read is a
// wakeup.
func Pending(opts Options) (Wakeups, error) {
	r := &reader{
		root:     cmp.Or(opts.Root, "/proc"),
		maxTasks: cmp.Or(opts.MaxTasks, DefaultMaxTasks),
		maxFDs:   cmp.Or(opts.MaxFDs, DefaultMaxFDs),
		self:     map[int]bool{},
		buf:      make([]byte, 4096),
		comm:     map[int]string{},
		seen:     map[string]bool{},
	}
	if opts.Self == nil {
		r.self[os.Getpid()] = true
	}
	for _, p := range opts.Self {
		r.self[p] = true
	}
	first, err := r.pass(true)
	if err != nil {
		return nil, err
	}
	if !r.bounded {
		second, err := r.pass(false)
		if err != nil {
			return nil, err
		}
		r.compare(first, second)
		for i, w := range r.out {
			if m := second[w.PID][w.TID]; w.TID != 0 && m != nil {
				r.out[i].Mark = string(bytes.TrimSpace(m))
			}
		}
	}
	slices.SortStableFunc(r.out, func(a, b Wakeup) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), strings.Compare(string(a.Reason), string(b.Reason)), strings.Compare(a.Detail, b.Detail))
	})
	return r.out, nil
}

type reader struct {
	root     string
	maxTasks int
	maxFDs   int
	self     map[int]bool
	buf      []byte
	out      Wakeups
	bounded  bool
	comm     map[int]string  // a process's leader's, for its own wakeups
	seen     map[string]bool // timerfds already reported, "PID FD LINK"
	tasks    int
}

// snapshot is a pass's marks: for each process, its tasks' schedstat and
// stat lines (nil where unreadable).
type snapshot map[int]map[int][]byte

// pass lists the processes and their tasks and takes each task's marks;
// the first also reads each task (read) and each process's timers.
func (r *reader) pass(first bool) (snapshot, error) {
	pids, err := numbers(r.root)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.root, err)
	}
	snap := snapshot{}
	for _, pid := range pids {
		if r.self[pid] {
			continue
		}
		dir := r.root + "/" + strconv.Itoa(pid)
		tids, err := numbers(dir + "/task")
		if gone(err) {
			continue
		}
		snap[pid] = map[int][]byte{}
		if err != nil {
			if first {
				r.add(Wakeup{PID: pid, Reason: Unreadable, Detail: errText(err)})
			}
			continue
		}
		for _, tid := range tids {
			if first {
				if r.tasks >= r.maxTasks {
					r.bounded = true
					r.add(Wakeup{PID: pid, TID: tid, Reason: Bound, Detail: fmt.Sprintf("more than %d tasks; the rest not read", r.maxTasks)})
					return snap, nil
				}
				r.tasks++
			}
			tdir := dir + "/task/" + strconv.Itoa(tid)
			if !first {
				mark, err := r.mark(task{fd: -1, path: tdir})
				if !gone(err) {
					snap[pid][tid] = mark
				}
				continue
			}
			// The task's files are opened from its directory, walked once.
			fd, err := unix.Open(tdir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if gone(err) {
				continue
			}
			t := task{fd: -1, path: tdir}
			if err == nil {
				t.fd = fd
			}
			mark, err := r.mark(t)
			if !gone(err) {
				snap[pid][tid] = mark
				r.task(pid, tid, t, len(tids), err)
			}
			if t.fd >= 0 {
				unix.Close(t.fd)
			}
		}
		if first {
			r.timers(pid, dir)
		}
	}
	return snap, nil
}

// task is a task's (or a process's) directory: opened (fd, -1 where it
// is not) and named, for its errors and where it is not open.
type task struct {
	fd   int
	path string
}

// at is where name in t opens from: t's fd and name, or the whole path.
func (t task) at(name string) (int, string) {
	if t.fd < 0 {
		return unix.AT_FDCWD, t.path + "/" + name
	}
	return t.fd, name
}

// mark is what changes when a task runs: its schedstat, time on a CPU
// and times scheduled (a kernel without schedstats reads "0 0 0": its
// stat line then, whose CPU times and faults move less finely).
func (r *reader) mark(t task) ([]byte, error) {
	b, err := r.read(t, "schedstat")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(bytes.TrimSpace(b), []byte("0 0 0")) {
		return append([]byte(nil), b...), nil
	}
	if b, err = r.read(t, "stat"); err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// compare adds a Changed wakeup for each process or task that appeared,
// ended or ran between the passes.
func (r *reader) compare(first, second snapshot) {
	for pid, tasks := range second {
		if _, ok := first[pid]; !ok {
			r.add(Wakeup{PID: pid, Reason: Changed, Detail: "process appeared"})
		}
		for tid, mark := range tasks {
			was, ok := first[pid][tid]
			switch {
			case !ok:
				r.add(Wakeup{PID: pid, TID: tid, Reason: Changed, Detail: "task appeared"})
			case !bytes.Equal(was, mark):
				r.add(Wakeup{PID: pid, TID: tid, Comm: r.comm[tid], Reason: Changed, Detail: "task ran"})
			}
		}
	}
	for pid, tasks := range first {
		for tid := range tasks {
			if _, ok := second[pid][tid]; !ok {
				r.add(Wakeup{PID: pid, TID: tid, Comm: r.comm[tid], Reason: Changed, Detail: "task ended"})
			}
		}
	}
}

// task reads one task: its state, where it is blocked, its fd table.
// err is the error reading its mark.
func (r *reader) task(pid, tid int, tdir task, ntasks int, err error) {
	var b []byte
	if err == nil {
		b, err = r.read(tdir, "stat")
	}
	if gone(err) {
		return
	}
	if err != nil {
		r.add(Wakeup{PID: pid, TID: tid, Reason: Unreadable, Detail: errText(err)})
		return
	}
	rawComm, state, err := parseStat(b)
	if err != nil {
		r.add(Wakeup{PID: pid, TID: tid, Reason: Unreadable, Detail: "stat: " + escape(b)})
		return
	}
	comm := escape(rawComm)
	r.comm[tid] = comm
	w := Wakeup{PID: pid, TID: tid, Comm: comm}
	switch state {
	case 'R':
		w.Reason = Running
	case 'S':
		r.blocked(&w, tdir)
	case 'D':
		w.Reason = DiskWait
	case 'T', 't':
		w.Reason = Stopped
	case 'Z':
		if ntasks > 1 {
			// A leader that ended before its threads: they are read.
			return
		}
		r.add(Wakeup{PID: pid, TID: tid, Comm: comm, Reason: Zombie})
		return
	case 'X':
		return
	default:
		w.Reason, w.Detail = UnknownState, escape([]byte{state})
	}
	if w.Reason != "" {
		r.add(w)
	}
	r.fds(pid, tid, comm, tdir)
}

// blocked reads where a sleeping task waits into w, whose Reason stays
// empty when the wait is quiet. A task gone meanwhile is quiet here: the
// second pass tells.
func (r *reader) blocked(w *Wakeup, tdir task) {
	b, err := r.read(tdir, "syscall")
	if gone(err) {
		return
	}
	if err != nil {
		w.Reason, w.Detail = Unreadable, errText(err)
		return
	}
	st, nr, args, err := parseSyscall(b)
	switch {
	case err != nil:
		w.Reason, w.Detail = Unreadable, "syscall: "+escape(b)
		return
	case st == runningState:
		w.Reason = Running
		return
	case st == notInSyscall:
		w.Reason, w.Detail = Transient, "not in a syscall"
		return
	}
	v := classify(nr, args)
	w.Syscall = v.name
	if v.fd >= 0 {
		quiet, detail := r.fdQuiet(tdir, v.fd)
		if quiet {
			return
		}
		w.Reason, w.Detail = v.reason, detail
		return
	}
	if v.quiet {
		return
	}
	w.Reason, w.Within, w.Bounded = v.reason, v.within, v.bounded
}

// fdQuiet tells whether a wait on the task's fd is one no timeout
// reaches: a pipe, a FIFO, or an anonymous inode quietLink names. A socket
// (SO_RCVTIMEO), a tty (VTIME) and the rest are not.
func (r *reader) fdQuiet(tdir task, fd int) (bool, string) {
	name := "fd/" + strconv.Itoa(fd)
	link, err := r.readlink(tdir, name)
	if err != nil {
		return false, errText(err)
	}
	if quietLink(link) {
		return true, ""
	}
	var st unix.Stat_t
	if dfd, rel := tdir.at(name); unix.Fstatat(dfd, rel, &st, 0) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return true, ""
	}
	return false, fmt.Sprintf("fd %d: %s", fd, escape([]byte(link)))
}

// fds reads a task's fd table (each task's: a thread may have one of its
// own, by clone without CLONE_FILES or unshare) for armed timerfds and
// io_uring instances.
func (r *reader) fds(pid, tid int, comm string, tdir task) {
	at, rel := tdir.at("fd")
	dfd, err := unix.Openat(at, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = &fs.PathError{Op: "open", Path: tdir.path + "/fd", Err: err}
	}
	var names []string
	if err == nil {
		f := os.NewFile(uintptr(dfd), tdir.path+"/fd")
		names, err = f.Readdirnames(-1)
		f.Close()
	}
	if gone(err) {
		return
	}
	if err != nil {
		r.add(Wakeup{PID: pid, TID: tid, Comm: comm, Reason: Unreadable, Detail: errText(err)})
		return
	}
	if len(names) > r.maxFDs {
		r.add(Wakeup{PID: pid, TID: tid, Comm: comm, Reason: Bound, Detail: fmt.Sprintf("more than %d fds; the rest not read", r.maxFDs)})
		names = names[:r.maxFDs]
	}
	for _, n := range names {
		link, err := r.readlink(tdir, "fd/"+n)
		if err != nil {
			continue // closed since the listing
		}
		var reason Reason
		switch link {
		case "anon_inode:[timerfd]":
			reason = Timerfd
		case "anon_inode:[io_uring]":
			reason = IOURing
		default:
			continue
		}
		// Tasks that share a table share its timerfds: one wakeup.
		key := strconv.Itoa(pid) + " " + n + " " + link
		if r.seen[key] {
			continue
		}
		r.seen[key] = true
		w := Wakeup{PID: pid, TID: tid, Comm: comm, Reason: reason, Detail: "fd " + n}
		if reason == Timerfd {
			b, err := r.read(tdir, "fdinfo/"+n)
			if gone(err) {
				continue
			}
			if err != nil {
				w.Reason, w.Detail = Unreadable, errText(err)
				r.add(w)
				continue
			}
			left, err := parseTimerfd(b)
			if err != nil {
				w.Reason, w.Detail = Unreadable, "fdinfo "+n+": "+escape(b)
				r.add(w)
				continue
			}
			if left == 0 {
				continue // disarmed
			}
			w.Within, w.Bounded = left, true
		}
		r.add(w)
	}
}

// timers reads a process's POSIX timers.
func (r *reader) timers(pid int, dir string) {
	b, err := r.read(task{fd: -1, path: dir}, "timers")
	if gone(err) {
		return
	}
	if err != nil {
		r.add(Wakeup{PID: pid, Comm: r.comm[pid], Reason: Unreadable, Detail: errText(err)})
		return
	}
	if n := posixTimers(b); n > 0 {
		r.add(Wakeup{PID: pid, Comm: r.comm[pid], Reason: PosixTimer, Detail: fmt.Sprintf("%d timers", n)})
	}
}

func (r *reader) add(w Wakeup) { r.out = append(r.out, w) }

// read reads a small /proc file, name in dir (a task, or a path), into
// the reader's buffer (valid until the next read), growing it for a file
// that fills it.
func (r *reader) read(t task, name string) ([]byte, error) {
	path := t.path + "/" + name
	dfd, rel := t.at(name)
	fd, err := unix.Openat(dfd, rel, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for {
		m, err := unix.Read(fd, r.buf[n:])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
	}
}

// readlink reads the link name in t.
func (r *reader) readlink(t task, name string) (string, error) {
	dfd, rel := t.at(name)
	for {
		n, err := unix.Readlinkat(dfd, rel, r.buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: t.path + "/" + name, Err: err}
		}
		if n < len(r.buf) {
			return string(r.buf[:n]), nil
		}
		r.buf = make([]byte, 2*len(r.buf))
	}
}

// names lists a directory without sorting it.
func names(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// numbers lists the numeric entries of a directory, in order.
func numbers(dir string) ([]int, error) {
	ns, err := names(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, n := range ns {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}

// gone tells a task or process that ended while read.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// errText names an error by the file's name in its task or process
// directory and its errno: "syscall: EACCES".
func errText(err error) string {
	var pe *fs.PathError
	var en unix.Errno
	if !errors.As(err, &pe) || !errors.As(err, &en) || unix.ErrnoName(en) == "" {
		return err.Error()
	}
	name := pe.Path
	if i := strings.LastIndex(name, "/task/"); i >= 0 {
		name = name[i+len("/task/"):]
		name = name[strings.IndexByte(name, '/')+1:]
	} else if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name + ": " + unix.ErrnoName(en)
}
