package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// Modes of the network: none (loopback only, DNS answered NXDOMAIN),
// sinkhole (DNS answered with a documentation address, SinkIP; outbound
// TCP redirected to the agent's listeners), open (the
// container's own network; only observed).
const (
	ModeNone     = "none"
	ModeSinkhole = "sinkhole"
	ModeOpen     = "open"
)

// Event is one thing the agent saw. T is CLOCK_MONOTONIC in nanoseconds,
// the same clock as the runner's (containers share the kernel's).
type Event struct {
	T    int64  `json:"t"`
	Kind string `json:"k"` // see the Kind* constants
	PID  int    `json:"pid,omitempty"`
	PPID int    `json:"ppid,omitempty"`

	Argv []string `json:"argv,omitempty"`
	// Cwd is the directory an exec ran in: on a failed exec's event, and
	// for one that worked on the KindExe event that follows it (read at
	// the exec event, where the agent reads /proc/PID once).
	Cwd      string `json:"cwd,omitempty"`
	ExitCode *int   `json:"exit,omitempty"`
	Signal   string `json:"sig,omitempty"`

	Family   string `json:"fam,omitempty"` // inet, inet6, unix
	Address  string `json:"addr,omitempty"`
	Port     int    `json:"port,omitempty"`
	Protocol string `json:"proto,omitempty"` // tcp, udp, raw, unix
	Result   string `json:"res,omitempty"`   // ok, an errno name, redirected

	Host   string `json:"host,omitempty"` // DNS name, HTTP Host or TLS SNI
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`

	// Payload is what a network call sent: every message and iovec of
	// the call, up to MaxPayload bytes; or, for KindStderr, the server's
	// stderr when it is not valid UTF-8 (Data then is empty).
	Payload []byte `json:"payload,omitempty"`
	// Data is server stderr (KindStderr) or a message (KindError).
	Data string `json:"d,omitempty"`

	// Exe is the program a process runs (KindExe): /proc/PID/exe after
	// its exec, "/memfd:NAME (deleted)" for one run from memory; SHA256 is
	// the file's, when it could be read (files up to MaxExeHash bytes).
	Exe       string `json:"exe,omitempty"`
	SHA256    string `json:"sha,omitempty"`
	Anonymous bool   `json:"anon,omitempty"`

	// Unreadable is set when the task's memory was closed to the agent (a
	// non-dumpable task) where the agent had to read it: a network call is
	// then refused (Result EACCES), an exec is reported from /proc.
	Unreadable bool `json:"unread,omitempty"`
	// Truncated names what hit one of the agent's bounds (argv, payload,
	// questions, exe, frame): the event is not whole. On a KindExe event it
	// may instead be ExeChanged.
	Truncated string `json:"trunc,omitempty"`
}

// What a program event without a sum says instead (Truncated): the file
// was written between the exec and the end of its hash (after the program
// ended: a running one cannot be written), or it could not be read (made
// unreadable after the exec; a process closed to the agent).
const (
	ExeChanged  = "exe-changed"
	ExeUnhashed = "exe-unhashed"
	// ExeWritable marks a sum taken of a memfd not sealed against writes:
	// it may have been rewritten through a mapping since it ran.
	ExeWritable = "exe-writable"
)

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
	KindSocket  = "socket"  // a socket of a refused family (Family; Result EAFNOSUPPORT)
	KindExe     = "exe"     // the program a process runs after its exec (Exe, SHA256)
	KindTamper  = "tamper"  // a call aimed at the agent itself, refused (Data: what; Result EPERM)
	KindQuiet   = "quiet"   // a quiet reading, answering QuietSignal (Data: a QuietReading)
	// KindEnd is the agent's last frame, written as it exits once the
	// server ended (ExitCode: the agent's own, the server's code or
	// 128+signal; Data: why, when the agent could not run it). An agent
	// that ends without it did not choose to: as PID 1 of its PID
	// namespace nothing inside can SIGKILL it, so it was killed from
	// outside (the host, the OOM killer), or crashed (its raw output then
	// says so). The server cannot forge it: see Decode.
	KindEnd = "end"
)

// Bounds of what the agent reads from a server and puts in a frame. Each
// one that is hit marks the event Truncated; nothing is cut silently.
const (
	// MaxFrame bounds one frame on the wire. The agent keeps its own frames
	// under it; a longer one reaching Decode is delivered marked
	// "frame", with its kind and pid.
	MaxFrame = 1 << 20
	// MaxArgv bounds the bytes of an exec's argv (all strings together),
	// MaxArgs their count: far above any real command line.
	MaxArgv = 128 << 10
	MaxArgs = 8192
	// MaxPayload bounds the bytes read from one network call: every
	// datagram of a sendmmsg and every iovec of each, in order.
	MaxPayload = 64 << 10
	// MaxMessages is the kernel's own cap on sendmmsg's vlen and on an
	// iovec's length (UIO_MAXIOV): all of them are read, never cut.
	MaxMessages = 1024
	// MaxQuestions bounds the DNS questions read from one query.
	MaxQuestions = 64
	// MaxExeHash bounds the size of a program the agent hashes (node's is
	// about 120 MiB), once per distinct file, on its own thread while the
	// program runs.
	MaxExeHash = 256 << 20
)

// frameMark starts every line the agent writes; the server's stderr only
// ever reaches the runner inside KindStderr frames.
const frameMark = '\x1e'

// Decode reads frames from r until it ends, calling fn for each event.
// Only the agent writes frames: the server's stderr is a pipe the agent
// reads and wraps in KindStderr frames, where JSON escapes every control
// byte (the frame mark and the newline among them), so that nothing the
// server writes starts a line with the mark; its stdout is another stream
// of the attach (the engine's own headers tell them apart), never
// decoded here; and the container's stderr is the agent's alone (the
// server inherits no descriptor of it, and the agent is not dumpable, so
// /proc/1/fd/2 and pidfd_getfd are closed to the server's uid).
// Bytes that are not frames (the agent's own crash output, or an image
// without the agent) are passed to raw. A frame longer than MaxFrame is
// delivered as the event it starts (time, kind, pids) marked Truncated
// "frame", never as raw bytes.
func Decode(r io.Reader, fn func(Event), raw func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte  // the start of a frame longer than the reader's buffer
	rawLine := false // the line being read is not a frame: passed on as read
	over := false    // the frame passed MaxFrame: its rest is skipped
	for {
		chunk, err := br.ReadSlice('\n')
		whole := err != bufio.ErrBufferFull
		switch {
		case rawLine || (long == nil && !over && !whole && (len(chunk) == 0 || chunk[0] != frameMark)):
			raw(append([]byte(nil), chunk...))
			rawLine = !whole
		case over:
			over = !whole
		case !whole:
			if len(long)+len(chunk) > MaxFrame {
				fn(frameHead(long))
				long, over = nil, true
			} else {
				long = append(long, chunk...)
			}
		default:
			line := chunk
			if long != nil {
				line, long = append(long, chunk...), nil
			}
			if len(line) > MaxFrame {
				fn(frameHead(line))
			} else if len(line) > 0 {
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
		}
		if err != nil && whole {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// frameHead reads the first fields of a frame cut at MaxFrame: the agent
// writes t, k, pid and ppid first.
func frameHead(b []byte) Event {
	e := Event{Truncated: "frame"}
	d := json.NewDecoder(bytes.NewReader(b[1:]))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return e
	}
	for i := 0; i < 4; i++ {
		k, err := d.Token()
		if err != nil {
			return e
		}
		v, err := d.Token()
		if err != nil {
			return e
		}
		n, _ := v.(json.Number)
		num, _ := n.Int64()
		switch k {
		case "t":
			e.T = num
		case "k":
			e.Kind, _ = v.(string)
		case "pid":
			e.PID = int(num)
		case "ppid":
			e.PPID = int(num)
		}
	}
	return e
}

// ChildEnv is the variable the agent marks its own traced child with
// (its value is never read from a container's environment by PID 1): a
// session refuses it among a server's variables.
const ChildEnv = "MCPSANDBOX_AGENT_CHILD"
