//go:build linux && amd64

package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// identify reports the program a process runs after its exec, while it
// is stopped at its exec event: the file /proc/PID/exe names (the binary,
// or the interpreter of a script), its sha256, whether it is anonymous (a
// memfd, or a file deleted before or after the exec), whatever argv[0]
// says, and the directory it runs in. /proc/PID is walked once for all
// three (a new process's entries are built at their first lookup, the
// largest part of what an exec costs the agent).
//
// A program the cache does not know is hashed on another thread while
// the process runs (node's binary is 100 MB: hashing it at the stop would
// hold the server for tens of milliseconds at every start); the file
// stays open, and its inode, size and times, taken at the stop, are taken
// again after the hash: a file written meanwhile (it cannot be while the
// program runs: ETXTBSY) has no sum, and its event is marked
// "exe-changed". Its event then comes after later ones of other processes,
// but before this process's own next exec and its exit (see settle).
func (t *tracer) identify(pid int) {
	t.settle(pid)
	ev := &Event{Kind: KindExe, PID: pid}
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		ev.Unreadable, ev.Truncated = true, ExeUnhashed
		t.out.emit(ev)
		return
	}
	defer unix.Close(dir)
	// A link may not read (a path over PATH_MAX) where the file still
	// opens: the sum is taken all the same, and the missing name said.
	cwd, cerr := readlinkat(dir, "cwd")
	ev.Cwd = cwd
	link, lerr := readlinkat(dir, "exe")
	ev.Exe = link
	if cerr != nil && lerr == nil {
		ev.Truncated = addTrunc(ev.Truncated, "cwd")
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, "exe", &st, 0); err != nil {
		// A program its user may not read leaves the process closed to
		// the agent: its exec (argv) is still reported, its file is not.
		ev.Unreadable, ev.Truncated = lerr != nil, ExeUnhashed
		t.out.emit(ev)
		return
	}
	if lerr != nil {
		ev.Truncated = addTrunc(ev.Truncated, "exe-path")
	}
	ev.Anonymous = strings.HasPrefix(link, "/memfd:") || (strings.HasSuffix(link, " (deleted)") && st.Nlink == 0)
	trusted := t.exes.trusted(dir, st.Dev)
	if sum, trunc, known := t.exes.lookup(st, trusted); known {
		ev.SHA256 = sum
		if trunc != "" {
			ev.Truncated = addTrunc(ev.Truncated, trunc)
		}
		t.out.emit(ev)
		return
	}
	// Opened while the process is stopped: the program it runs (a link
	// that cannot change while it lives), whatever its path names later.
	fd, err := unix.Openat(dir, "exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		ev.Truncated = addTrunc(ev.Truncated, ExeUnhashed) // made unreadable since the exec
		t.out.emit(ev)
		return
	}
	var opened unix.Stat_t
	if unix.Fstat(fd, &opened) != nil || keyOf(opened) != keyOf(st) {
		unix.Close(fd)
		ev.Truncated = addTrunc(ev.Truncated, ExeChanged)
		t.out.emit(ev)
		return
	}
	if ev.Anonymous {
		// A memfd runs even with a writable mapping of it alive, and a
		// write through that mapping leaves its stat as it was: unless
		// sealed against writes, what it holds by the end of the hash need
		// not be what ran.
		if seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0); err == nil && seals&unix.F_SEAL_WRITE == 0 {
			ev.Truncated = addTrunc(ev.Truncated, ExeWritable)
		}
	}
	// Its exit waits for the hash: the program's file cannot be written
	// while a process runs it (ETXTBSY), and the exit stop comes before
	// the process lets go of it. (A process killed by SIGKILL skips that
	// stop: then the stat taken after the hash tells.)
	if unix.PtraceSetOptions(pid, ptraceOptions|unix.PTRACE_O_TRACEEXIT) == nil {
		if tk := t.tasks[pid]; tk != nil {
			tk.exitStop = true
		}
	}
	done := make(chan struct{})
	t.hashing[pid] = done
	go func() {
		defer close(done)
		defer unix.Close(fd)
		sum, trunc := t.exes.hash(fd, st, trusted, pid)
		ev.SHA256 = sum
		if trunc != "" {
			ev.Truncated = addTrunc(ev.Truncated, trunc)
		}
		t.out.emit(ev)
	}()
}

// settle waits for the hash of pid's program, if one is running: its
// event must be sent before the process's next exec, and before its exit,
// which the runner takes as the end of its entry.
func (t *tracer) settle(pid int) {
	if done, ok := t.hashing[pid]; ok {
		<-done
		delete(t.hashing, pid)
	}
}

// settleAll waits for every hash still running.
func (t *tracer) settleAll() {
	for pid := range t.hashing {
		t.settle(pid)
	}
}

func readlinkat(dir int, name string) (string, error) {
	for n := 256; ; n *= 4 {
		b := make([]byte, n)
		m, err := unix.Readlinkat(dir, name, b)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(b[:m]), nil
		}
	}
}

// exeKey identifies a file's content without reading it: the same inode,
// size and times are the same bytes.
type exeKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func keyOf(st unix.Stat_t) exeKey {
	return exeKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// exeCache remembers the sha256 of the programs run, so that a thousand
// execs of one binary hash it once. It holds at most maxExes files and
// starts afresh past that (a file is then hashed again, never missed).
// The tracer looks up, the hashing goroutines store: mu guards both.
type exeCache struct {
	mu     sync.Mutex
	sums   map[exeKey]string
	hashed int // files read, for tests
	// devs says, per device, whether its file system changes a file's
	// times when the file is written through a shared mapping. tmpfs and
	// the memfd's shmem do not: a file there rewritten through a mapping
	// keeps its stat, so its sum is never cached (the tracer's alone).
	devs map[uint64]bool
}

const maxExes = 4096

func newExeCache() *exeCache { return &exeCache{sums: map[exeKey]string{}, devs: map[uint64]bool{}} }

// untimed are the file systems whose files keep their times when written
// through a shared mapping.
var untimed = []int64{unix.TMPFS_MAGIC, unix.HUGETLBFS_MAGIC, unix.RAMFS_MAGIC}

// trusted says whether the stat of dev's files tells their content (see
// devs), asking the file system of dir/exe the first time dev is seen.
func (c *exeCache) trusted(dir int, dev uint64) bool {
	if ok, seen := c.devs[dev]; seen {
		return ok
	}
	var fs unix.Statfs_t
	fd, err := unix.Openat(dir, "exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // not remembered: asked again next time
	}
	defer unix.Close(fd)
	if unix.Fstatfs(fd, &fs) != nil {
		return false
	}
	ok := !slices.Contains(untimed, int64(fs.Type))
	c.devs[dev] = ok
	return ok
}

// lookup returns a file's sum without reading it: known for a file over
// MaxExeHash (never read: trunc "exe") or, on a trusted device, one hashed
// before.
func (c *exeCache) lookup(st unix.Stat_t, trusted bool) (sum, trunc string, known bool) {
	if st.Size > MaxExeHash {
		return "", "exe", true
	}
	if !trusted {
		return "", "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, known = c.sums[keyOf(st)]
	return sum, "", known
}

// hash reads the open file fd, whose stat at the exec was st, and
// remembers its sum; trunc is "exe-changed" (and no sum) when the file is
// not the one stat'd at the exec any more once read.
func (c *exeCache) hash(fd int, st unix.Stat_t, trusted bool, pid int) (sum, trunc string) {
	h := sha256.New()
	_, err := io.Copy(h, io.NewSectionReader(fdReader(fd), 0, MaxExeHash))
	var after unix.Stat_t
	if err != nil || unix.Fstat(fd, &after) != nil || !sameContent(st, after, pid) {
		return "", ExeChanged
	}
	s := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hashed++
	if !trusted {
		return s, ""
	}
	if len(c.sums) >= maxExes {
		clear(c.sums)
	}
	c.sums[keyOf(st)] = s
	return s, ""
}

// sameContent says whether a program's file, stat'd at the exec (st) and
// after its hash (after), held the same bytes all along. A new inode, size
// or mtime says no. A ctime alone (chmod, link, an xattr) says no only if
// the process no longer runs the file: while it does (pid's program is
// still this inode), the kernel refuses every write to it.
func sameContent(st, after unix.Stat_t, pid int) bool {
	k, a := keyOf(st), keyOf(after)
	if k == a {
		return true
	}
	a.ctime = k.ctime
	if k != a || pid <= 0 {
		return false
	}
	var now unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &now) == nil && now.Dev == st.Dev && now.Ino == st.Ino
}

// fdReader reads a file descriptor the caller owns and closes.
type fdReader int

func (r fdReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := unix.Pread(int(r), b, off)
	if n == 0 && err == nil && len(b) > 0 {
		return 0, io.EOF
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

// sum hashes the file at path at once (lookup, then hash): for tests.
func (c *exeCache) sum(path string, st unix.Stat_t) (sum, trunc string) {
	if s, tr, ok := c.lookup(st, true); ok {
		return s, tr
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", ""
	}
	defer unix.Close(fd)
	return c.hash(fd, st, true, 0)
}

// cmdline reads a process's argv from /proc (readable even when its memory
// is not), bounded as an exec's argv is.
func cmdline(pid int) ([]string, string) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, MaxArgv+1))
	trunc := ""
	if len(b) > MaxArgv {
		b, trunc = b[:MaxArgv], "argv"
	}
	b = bytes.TrimSuffix(b, []byte{0})
	var argv []string
	for _, a := range bytes.Split(b, []byte{0}) {
		if len(argv) >= MaxArgs {
			return argv, "argv"
		}
		argv = append(argv, string(a))
	}
	return argv, trunc
}

// familyName names a socket family (and a netlink protocol) for a
// refused socket.
func familyName(family, proto uint32) string {
	switch family {
	case unix.AF_PACKET:
		return "packet"
	case unix.AF_VSOCK:
		return "vsock"
	case unix.AF_BLUETOOTH:
		return "bluetooth"
	case unix.AF_ALG:
		return "alg"
	case unix.AF_NETLINK:
		return "netlink:" + strconv.Itoa(int(proto))
	case unix.AF_XDP:
		return "xdp"
	case unix.AF_KEY:
		return "key"
	case unix.AF_TIPC:
		return "tipc"
	case unix.AF_RDS:
		return "rds"
	case unix.AF_CAN:
		return "can"
	case unix.AF_APPLETALK:
		return "appletalk"
	case unix.AF_X25:
		return "x25"
	case unix.AF_AX25:
		return "ax25"
	case unix.AF_IPX:
		return "ipx"
	case unix.AF_UNIX:
		return "unix"
	case unix.AF_INET:
		return "inet"
	case unix.AF_INET6:
		return "inet6"
	}
	return "af" + strconv.Itoa(int(family))
}

// typeName names a socket type.
func typeName(typ uint32) string {
	switch typ {
	case unix.SOCK_STREAM:
		return "stream"
	case unix.SOCK_DGRAM:
		return "dgram"
	case unix.SOCK_RAW:
		return "raw"
	case unix.SOCK_SEQPACKET:
		return "seqpacket"
	case unix.SOCK_RDM:
		return "rdm"
	}
	return "type" + strconv.Itoa(int(typ))
}
