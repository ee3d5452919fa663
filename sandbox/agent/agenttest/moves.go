package agenttest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Dest is where the datagrams go: TEST-NET-1, never routed.
var Dest = [4]byte{192, 0, 2, 1}

// ErrOnline refuses to send while the network namespace has an interface
// besides the loopback: nothing may leave.
var ErrOnline = errors.New("agenttest: a network interface besides the loopback is up; refusing to send")

// Offline returns ErrOnline unless the loopback is the only interface up.
func Offline() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("agenttest: listing interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			return ErrOnline
		}
	}
	return nil
}

// Ports the hiding moves send to, one each, to tell them apart.
const (
	PortMmsg     = 9
	PortIovec    = 10
	PortDatagram = 11
	PortBig      = 12
)

// DNSQuery is a query of type A for each name, the later names
// compressed against the first where they share its suffix.
func DNSQuery(names ...string) []byte {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, byte(len(names)), 0, 0, 0, 0, 0, 0}
	for _, name := range names {
		for _, l := range strings.Split(name, ".") {
			q = append(q, byte(len(l)))
			q = append(q, l...)
		}
		q = append(q, 0, 0, 1, 0, 1)
	}
	return q
}

// ExecArgv runs prog with its args and more arguments of n bytes in all,
// the secret the last one.
func ExecArgv(prog string, args []string, n int, secret string) error {
	args = append([]string(nil), args...)
	for size := 0; size < n; size += 1024 {
		args = append(args, strings.Repeat("a", 1023))
	}
	args = append(args, secret)
	return exec.Command(prog, args...).Run()
}

// ExecDisguised copies the program at self to dir and runs the copy with
// argv[0] set to a name it is not, and the given arguments.
func ExecDisguised(self, dir, argv0 string, args ...string) (string, error) {
	b, err := os.ReadFile(self)
	if err != nil {
		return "", err
	}
	copyPath := dir + "/innocent"
	if err := os.WriteFile(copyPath, b, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command(copyPath, args...)
	cmd.Args[0] = argv0
	return copyPath, cmd.Run()
}
