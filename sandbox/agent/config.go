package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Path is where the agent sits in every sandbox, and Name what it calls
// itself there: the place and name of the init Docker's --init adds, so
// that PID 1 looks like any container's.
const (
	Path = "/sbin/docker-init"
	Name = "docker-init"
)

// Config is what the runner tells the agent before the server starts. It
// comes on the container's stdin as one frame (frameMark, JSON, newline),
// never on the command line, where the server could read it in
// /proc/1/cmdline. The agent reads it a byte at a time, so that what
// follows on stdin (the MCP stream) is the server's, untouched.
type Config struct {
	// Network is ModeNone, ModeSinkhole or ModeOpen.
	Network string `json:"network"`
	// MaxEvents bounds the events sent; the rest are counted.
	MaxEvents int `json:"maxEvents"`
	// Tick is the heartbeat interval.
	Tick time.Duration `json:"tick"`
	// Dir is the server's working directory, entered once the config has
	// arrived: whatever the runner mounts after the container starts (the
	// workspace) is in place by then.
	Dir string `json:"dir,omitempty"`
	// Home, when set, is the server's HOME, in place of the one the
	// engine gave (its place in the environment kept): for an image whose
	// /etc/passwd gives the user no home, where the engine says "/".
	Home string `json:"home,omitempty"`
	// Pin keeps the server's tasks on the tracer's CPU while they stop
	// often (see pinner): the runner asks for it when the sandbox has one
	// CPU's time or less anyway (the default), where it costs the server
	// only running two threads at once, and only during those stretches.
	Pin bool `json:"pin,omitempty"`
	// PinRate is the stop rate a second from which the tasks are pinned
	// (0: pinRate); they are freed under a quarter of it. A test sets it
	// low, so that a burst on a loaded machine is still one.
	PinRate int `json:"pinRate,omitempty"`
	// Flush makes the agent answer FlushSignal with a tick at once (no
	// sooner than FlushGap after the last one): the runner, which sends it
	// from the host through a pidfd, closes a phase without waiting for
	// the next heartbeat. The server may send it too (same uid): that only
	// asks for a tick, which is true whoever asked (see flushTicks).
	Flush bool `json:"flush,omitempty"`
	// Quiet makes the agent answer QuietSignal with a quiet reading
	// (KindQuiet), no sooner than QuietGap after the last: the runner ends
	// a linger window early only on a reading that found nothing that can
	// still act.
	Quiet bool `json:"quiet,omitempty"`
}

// maxConfig bounds the config frame the agent reads.
const maxConfig = 64 << 10

// ErrConfig marks a config frame that is missing or malformed.
var ErrConfig = errors.New("agent config")

// WriteConfig writes c as the config frame.
func WriteConfig(w io.Writer, c Config) error {
	return encode(w, &Event{Kind: KindConfig, Data: mustJSON(c)})
}

// ReadConfig reads the config frame from r, one byte at a time, consuming
// nothing after its newline.
func ReadConfig(r io.Reader) (Config, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			if len(line) >= maxConfig {
				return Config{}, fmt.Errorf("%w: frame over %d bytes", ErrConfig, maxConfig)
			}
			line = append(line, b[0])
		}
		if err != nil {
			return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	if len(line) == 0 || line[0] != frameMark {
		return Config{}, fmt.Errorf("%w: not a frame", ErrConfig)
	}
	var e Event
	if err := json.Unmarshal(line[1:], &e); err != nil || e.Kind != KindConfig {
		return Config{}, fmt.Errorf("%w: not a config frame", ErrConfig)
	}
	var c Config
	if err := json.Unmarshal([]byte(e.Data), &c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return c, nil
}

// KindConfig is the config frame's kind (runner to agent only).
const KindConfig = "config"

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a Config always encodes
	}
	return string(b)
}

// SinkPorts are the TCP ports the sinkhole answers on the container's
// loopback: a server scanned over HTTP cannot listen on them there.
func SinkPorts() []int { return []int{80, 443, 8080, 8443} }
