package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestNetnsNeedsPrivilege: a runner that may not enter the container's
// network namespace (not root) is told so, and what to do, before it
// waits for the server. The test runs itself again as nobody, against
// this process's namespace.
func TestNetnsNeedsPrivilege(t *testing.T) {
	if pid := os.Getenv("MCPSANDBOX_NETNS_PID"); pid != "" {
		p, _ := strconv.Atoi(pid)
		_, err := openNetns("", p) // every cgroup path holds ""
		fmt.Printf("openNetns: %v\n", err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a process as another user")
	}
	// The test binary, where nobody may run it.
	dir, err := os.MkdirTemp("", "mcpsandbox-netns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(dir, 0o755))
	self, err := os.Executable()
	must(err)
	in, err := os.Open(self)
	must(err)
	defer in.Close()
	bin := filepath.Join(dir, "sandbox.test")
	out, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	must(err)
	_, err = io.Copy(out, in)
	must(err)
	must(out.Close())
	cmd := exec.Command(bin, "-test.run=^TestNetnsNeedsPrivilege$", "-test.v")
	cmd.Env = append(os.Environ(), "MCPSANDBOX_NETNS_PID="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("running as nobody: %v\n%s", err, got)
	}
	for _, want := range []string{"openNetns: opening the container's network namespace: permission denied", "run mcpsandbox as root", "or scan the server over stdio"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("as nobody: %s\nwant %q", got, want)
		}
	}
}

// TestNetnsDialReachesTheLoopback: entering a namespace (here the
// runner's own) and dialing a port on its loopback connects, and a port
// nobody listens on says connection refused.
func TestNetnsDialReachesTheLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN), as the HTTP transports do")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := openNetns("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	port := l.Addr().(*net.TCPAddr).Port
	c, err := d.dial(context.Background(), port)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.Close()
	l.Close()
	if _, err := d.dial(context.Background(), port); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a closed port: %v, want connection refused", err)
	}
}
