//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// agentFlusher asks the agent for a tick now (agent.Config.Flush): a
// signal from the host, through a pidfd of the container's init, so that
// no pid reused once the container is gone can be signalled instead.
type agentFlusher struct {
	mu sync.Mutex // a flush never meets the fd's number reused after close
	fd int        // -1 once closed
}

// errNotInit marks a pid that is not a namespace's init.
var errNotInit = errors.New("not a pid namespace's init")

// openFlusher opens a pidfd of pid, the container's init on the host as
// the engine tells it right after the start, while the agent waits for
// its config and nothing else runs in the container. It fails where the
// runner cannot signal it (another host, another pid namespace, no
// privilege): marks then wait for the agent's heartbeat.
func openFlusher(pid int) (*agentFlusher, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("opening a pidfd of the container's init %d: %w", pid, err)
	}
	f := &agentFlusher{fd: fd}
	// The pid names, in the runner's namespace, a process that is PID 1
	// of a namespace below it (a runner in a container of its own would
	// find another process, or none, under the host's pid).
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	ns := ""
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			ns = v
		}
	}
	if fields := strings.Fields(ns); err != nil || len(fields) < 2 || fields[len(fields)-1] != "1" {
		f.close()
		return nil, fmt.Errorf("process %d (NSpid %q): %w", pid, strings.TrimSpace(ns), errNotInit)
	}
	// Still the process the pidfd holds: had it ended and its pid been
	// reused before the read, the signal 0 would find the pidfd's dead.
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		f.close()
		return nil, fmt.Errorf("checking the container's init %d: %w", pid, err)
	}
	return f, nil
}

// flush asks for a tick, quiet for a quiet reading; an error (the agent
// has ended) is no matter: the wait ends with the stream.
func (f *agentFlusher) flush() { f.send(agent.FlushSignal) }
func (f *agentFlusher) quiet() { f.send(agent.QuietSignal) }

func (f *agentFlusher) send(sig unix.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd >= 0 {
		unix.PidfdSendSignal(f.fd, sig, nil, 0)
	}
}

func (f *agentFlusher) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
}
