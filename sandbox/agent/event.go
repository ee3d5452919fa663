// Package agent is mcpsandbox's in-container agent and the runner's reader
// of what it reports. The agent runs as PID 1 of every sandbox: it starts
// the server as its child under ptrace with a seccomp filter that stops only
// the syscalls worth recording (execve, connect, sendto, sendmsg, bind,
// listen, ...), reaps zombies, answers DNS on the container's loopback, and
// streams events to the runner on the container's stderr, with the server's
// own stderr wrapped in frames the server cannot forge.
package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"golang.org/x/sys/unix"
)

// Modes of the network: none (loopback only, DNS answered NXDOMAIN),
// sinkhole (DNS answered with loopback, outbound TCP redirected to the
// agent's listeners), open (the container's own network; only observed).
const (
	ModeNone     = "none"
	ModeSinkhole = "sinkhole"
	ModeOpen     = "open"
)

// Now is CLOCK_MONOTONIC in nanoseconds.
func Now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Event is one thing the agent saw. T is CLOCK_MONOTONIC in nanoseconds,
// the same clock as the runner's (containers share the kernel's).
type Event struct {
	T    int64  `json:"t"`
	Kind string `json:"k"` // see the Kind* constants
	PID  int    `json:"pid,omitempty"`
	PPID int    `json:"ppid,omitempty"`

	Argv     []string `json:"argv,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	ExitCode *int     `json:"exit,omitempty"`
	Signal   string   `json:"sig,omitempty"`

	Family   string `json:"fam,omitempty"` // inet, inet6, unix
	Address  string `json:"addr,omitempty"`
	Port     int    `json:"port,omitempty"`
	Protocol string `json:"proto,omitempty"` // tcp, udp, raw, unix
	Result   string `json:"res,omitempty"`   // ok, an errno name, redirected

	Host   string `json:"host,omitempty"` // DNS name, HTTP Host or TLS SNI
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`

	// Payload is the start of what a network call sent (bounded).
	Payload []byte `json:"payload,omitempty"`
	// Data is server stderr (KindStderr) or a message (KindError).
	Data string `json:"d,omitempty"`
}

// Event kinds.
const (
	KindTick    = "tick"    // heartbeat: every event before it has been sent
	KindStart   = "start"   // the agent runs; Data holds its mode
	KindExec    = "exec"    // a process ran a program (Result: ok or errno)
	KindFork    = "fork"    // a process was forked (it may exec next, or not)
	KindExit    = "exit"    // a process ended
	KindConnect = "connect" // connect, or sendto/sendmsg with an address
	KindListen  = "listen"  // listen, or bind of a UDP port
	KindDNS     = "dns"     // a DNS query (Host)
	KindHTTP    = "http"    // a request the sinkhole answered
	KindTLS     = "tls"     // a TLS ClientHello the sinkhole saw (Host = SNI)
	KindStderr  = "stderr"  // the server's stderr
	KindError   = "error"   // the agent's own trouble
	KindDropped = "dropped" // events lost to the agent's bound (Data: count)
)

// frameMark starts every line the agent writes; the server's stderr only
// ever reaches the runner inside KindStderr frames.
const frameMark = '\x1e'

// encode writes one frame.
func encode(w io.Writer, e *Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+2)
	buf = append(buf, frameMark)
	buf = append(buf, b...)
	buf = append(buf, '\n')
	_, err = w.Write(buf)
	return err
}

// Decode reads frames from r until it ends, calling fn for each event.
// Bytes that are not frames (the agent's own crash output, or an image
// without the agent) are passed to raw.
func Decode(r io.Reader, fn func(Event), raw func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// An over-long line cannot be a frame the agent wrote whole.
			raw(append([]byte(nil), line...))
			continue
		}
		if len(line) > 0 {
			if line[0] == frameMark {
				var e Event
				if jerr := json.Unmarshal(bytes.TrimSpace(line[1:]), &e); jerr == nil {
					fn(e)
				} else {
					raw(append([]byte(nil), line...))
				}
			} else {
				raw(append([]byte(nil), line...))
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
