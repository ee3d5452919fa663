//go:build linux && amd64

package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// errUnreadable is a task's memory closed to the agent: the task made
// itself non-dumpable (or runs a program its user may not read), and the
// agent, without CAP_SYS_PTRACE, may then read it by no means at all:
// process_vm_readv, /proc/PID/mem and PTRACE_PEEKDATA all check it.
var errUnreadable = errors.New("the task's memory is closed to the agent")

// pageSize bounds reads that must not cross into an unmapped page.
const pageSize = 4096

// readAt fills b from a task's memory at addr; it reads fewer bytes at an
// unmapped page (none for a bad address, as the kernel would fault). It
// tries process_vm_readv (one syscall), then /proc/PID/mem, then
// PTRACE_PEEKDATA.
func readAt(tid int, addr uint64, b []byte) (int, error) {
	if addr == 0 || len(b) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == nil {
		return n, nil
	}
	if err != unix.EPERM && err != unix.EACCES {
		return 0, nil // EFAULT: nothing mapped there; ESRCH: gone
	}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/mem", tid)); err == nil {
		m, _ := f.ReadAt(b, int64(addr))
		f.Close()
		if m > 0 {
			return m, nil
		}
	}
	if m, _ := unix.PtracePeekData(tid, uintptr(addr), b); m > 0 {
		return m, nil
	}
	return 0, errUnreadable
}

// readBytes reads up to n bytes at addr.
func readBytes(tid int, addr uint64, n int) ([]byte, error) {
	if addr == 0 || n <= 0 {
		return nil, nil
	}
	b := make([]byte, n)
	m, err := readAt(tid, addr, b)
	return b[:m], err
}

func writeBytes(tid int, addr uint64, b []byte) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteAt(b, int64(addr))
}

// readString reads a NUL-terminated string of at most max bytes, a page
// at a time (a string may end just before an unmapped page); cut is set
// when it is longer.
func readString(tid int, addr uint64, max int) (s string, cut bool, err error) {
	var out []byte
	var page [pageSize]byte
	for len(out) < max && addr != 0 {
		n := min(pageSize-int(addr%pageSize), max-len(out))
		m, err := readAt(tid, addr, page[:n])
		if err != nil {
			return "", false, err
		}
		if i := indexByte(page[:m], 0); i >= 0 {
			return string(append(out, page[:i]...)), false, nil
		}
		out = append(out, page[:m]...)
		if m < n {
			return string(out), false, nil // unmapped: the exec will fault
		}
		addr += uint64(m)
	}
	return string(out), len(out) >= max, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// readArgv reads a NULL-terminated array of string pointers (an exec's
// argv), at most MaxArgs strings and MaxArgv bytes in all; trunc is
// "argv" when there was more.
func readArgv(tid int, addr uint64) (argv []string, trunc string, err error) {
	left := MaxArgv
	var ptrs [pageSize]byte
	for addr != 0 {
		n := pageSize - int(addr%pageSize)
		m, err := readAt(tid, addr, ptrs[:n])
		if err != nil {
			return nil, "", err
		}
		for i := 0; i+8 <= m; i += 8 {
			p := binary.LittleEndian.Uint64(ptrs[i:])
			if p == 0 {
				return argv, trunc, nil
			}
			if len(argv) >= MaxArgs || left <= 0 {
				return argv, "argv", nil
			}
			s, cut, err := readString(tid, p, left)
			if err != nil {
				return nil, "", err
			}
			if cut {
				trunc = "argv"
			}
			left -= len(s)
			argv = append(argv, s)
		}
		if m < n {
			return argv, trunc, nil
		}
		addr += uint64(m)
	}
	return argv, trunc, nil
}

// readSockaddr decodes an AF_INET or AF_INET6 address; others give nil.
func readSockaddr(tid int, addr uint64, n int) (*Event, error) {
	b, err := readBytes(tid, addr, min(n, 128))
	if err != nil || len(b) < 2 {
		return nil, err
	}
	switch binary.LittleEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < 8 {
			return nil, nil
		}
		return &Event{Family: "inet", Port: int(binary.BigEndian.Uint16(b[2:])), Address: net.IP(b[4:8]).String()}, nil
	case unix.AF_INET6:
		if len(b) < 24 {
			return nil, nil
		}
		return &Event{Family: "inet6", Port: int(binary.BigEndian.Uint16(b[2:])), Address: net.IP(b[8:24]).String()}, nil
	}
	return nil, nil
}

// iovec is one buffer of a send call.
type iovec struct {
	base, len uint64
}

// readIovecs reads a struct iovec array of n entries (at most
// MaxMessages, more is the kernel's EMSGSIZE).
func readIovecs(tid int, addr, n uint64) ([]iovec, error) {
	if n == 0 || n > MaxMessages {
		return nil, nil
	}
	b, err := readBytes(tid, addr, int(n)*16)
	if err != nil {
		return nil, err
	}
	out := make([]iovec, 0, len(b)/16)
	for i := 0; i+16 <= len(b); i += 16 {
		out = append(out, iovec{binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])})
	}
	return out, nil
}

// gather reads the buffers in order, taking from *left (the call's
// budget); cut is set when some bytes did not fit.
func gather(tid int, iov []iovec, left *int) (data []byte, cut bool, err error) {
	for _, v := range iov {
		if v.len == 0 {
			continue
		}
		if *left <= 0 {
			return data, true, nil
		}
		n := int(min(v.len, uint64(*left)))
		b, err := readBytes(tid, v.base, n)
		if err != nil {
			return nil, false, err
		}
		data = append(data, b...)
		*left -= len(b)
		if uint64(n) < v.len {
			cut = true
		}
		if len(b) < n {
			return data, cut, nil // unmapped: the kernel faults here too
		}
	}
	return data, cut, nil
}
