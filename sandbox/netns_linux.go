package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// netnsDialer opens TCP connections from inside the container's network
// namespace, to the server's port on the container's loopback.
//
// Why this and not a relay through the agent: the runner already reads
// the container from the host (its upper dir, /proc/PID/root, the IPC
// namespace: see hostview_linux.go), so entering one more namespace adds
// no new requirement to a scan with the default change source; nothing is
// added inside the container (no process, no port, no traffic on the
// agent's channel, which carries the events and stderr the server could
// otherwise flood to slow the client down), it works with --no-agent, and
// the server sees exactly what a local client makes: a TCP connection
// from 127.0.0.1. The cost: the runner needs CAP_SYS_ADMIN (root) and a
// local engine; without them the scan stops with an error that says so.
type netnsDialer struct {
	// mu keeps ns open while a thread enters it: the session's end may
	// close it while the SDK still dials (a stream reconnecting).
	mu sync.RWMutex
	ns int // an fd of the container's network namespace, held open; -1 closed
}

// openNetns opens the network namespace of the container id's init (pid
// on the host) and checks that this process may enter it.
func openNetns(id string, pid int) (*netnsDialer, error) {
	fix := "run mcpsandbox as root (it needs CAP_SYS_ADMIN and a local engine to reach a server over HTTP without a published port), or scan the server over stdio"
	if pid <= 0 {
		return nil, &InfraError{Cause: "the container has no running process to reach the server's port from"}
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("opening the container's init to reach its network namespace: %v", err), Fix: fix, Err: err}
	}
	defer unix.Close(pidfd)
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || !bytes.Contains(cg, []byte(id)) {
		return nil, &InfraError{Cause: "the container's init is not on this host (a remote engine?): its network namespace cannot be entered to reach the server's port", Fix: fix}
	}
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("opening the container's network namespace: %v", err), Fix: fix, Err: err}
	}
	d := &netnsDialer{ns: ns}
	// Entering it once now says at the start, not at the first request,
	// that the runner lacks the privilege.
	if err := d.in(func() error { return nil }); err != nil {
		d.close()
		return nil, &InfraError{Cause: err.Error(), Fix: fix, Err: err}
	}
	return d, nil
}

// in runs f on an OS thread that is in the container's network namespace,
// then brings the thread back. A socket made in f stays in the container's
// namespace for its life. A thread that cannot come back is never used
// again: it stays locked and ends with its goroutine.
func (d *netnsDialer) in(f func() error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.ns < 0 {
		return errors.New("the session is closed: the container's network namespace is no longer held")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening the runner's network namespace: %w", err)
			return
		}
		defer unix.Close(self)
		if err := unix.Setns(d.ns, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering the container's network namespace: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("returning from the container's network namespace: %w", err))
			return // still locked: the thread ends with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// dial connects to port on the container's loopback: 127.0.0.1 first,
// then ::1 (a server that listens on "localhost" may have only one).
func (d *netnsDialer) dial(ctx context.Context, port int) (net.Conn, error) {
	var errs []error
	for _, host := range []string{"127.0.0.1", "::1"} {
		var c net.Conn
		err := d.in(func() error {
			// A literal address: one socket, made on this goroutine (and
			// so this thread), whatever the dialer does after.
			var err error
			c, err = (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, fmt.Sprint(port)))
			return err
		})
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	// The IPv4 loopback's answer says why; ::1 is often not configured.
	return nil, errs[0]
}

func (d *netnsDialer) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ns >= 0 {
		unix.Close(d.ns)
		d.ns = -1
	}
}
