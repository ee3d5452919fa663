//go:build linux && amd64

package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// identify reports the program a process runs after its exec: the file
// /proc/PID/exe names (the binary, or the interpreter of a script), its
// sha256, and whether it is anonymous (a memfd, or a file deleted before
// or after the exec), whatever argv[0] says.
func (t *tracer) identify(pid int) {
	ev := &Event{Kind: KindExe, PID: pid}
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	link, err := os.Readlink(exe)
	if err != nil {
		// A program its user may not read leaves the process closed to
		// the agent: its exec (argv) is still reported, its file is not.
		ev.Unreadable = true
		t.out.emit(ev)
		return
	}
	ev.Exe = link
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err == nil {
		ev.Anonymous = strings.HasPrefix(link, "/memfd:") || (strings.HasSuffix(link, " (deleted)") && st.Nlink == 0)
		ev.SHA256, ev.Truncated = t.exes.sum(exe, st)
	}
	t.out.emit(ev)
}

// exeKey identifies a file's content without reading it: the same inode,
// size and times are the same bytes.
type exeKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

// exeCache remembers the sha256 of the programs run, so that a thousand
// execs of one binary hash it once. It holds at most maxExes files and
// starts afresh past that (a file is then hashed again, never missed).
type exeCache struct {
	sums   map[exeKey]string
	hashed int // files read, for tests
}

const maxExes = 4096

func newExeCache() *exeCache { return &exeCache{sums: map[exeKey]string{}} }

// sum hashes the file at path (a /proc/PID/exe link, which opens even a
// deleted file or a memfd); trunc is "exe" when it is over MaxExeHash.
func (c *exeCache) sum(path string, st unix.Stat_t) (sum, trunc string) {
	if st.Size > MaxExeHash {
		return "", "exe"
	}
	k := exeKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	if s, ok := c.sums[k]; ok {
		return s, ""
	}
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, MaxExeHash)); err != nil {
		return "", ""
	}
	c.hashed++
	s := hex.EncodeToString(h.Sum(nil))
	if len(c.sums) >= maxExes {
		clear(c.sums)
	}
	c.sums[k] = s
	return s, ""
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
