package twin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// selfTest calls alpha as a client over HTTP and through the stdio relay,
// under in.Nonce: the runner then looks for both calls in the ledger and
// both markers in the files.
func (h *Host) selfTest(ctx context.Context, in SelfTestIn) SelfTestOut {
	h.ledger.set(PhaseSelfTest, in.Nonce, &in.Faults)
	var out SelfTestOut
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	for _, conn := range []Conn{ConnHTTP, ConnStdio} {
		var err error
		if conn == ConnHTTP {
			var out []byte
			out, err = exec.CommandContext(ctx, h.self, ProbeArg).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, clip(string(out), 1024))
			}
		} else {
			err = callAlpha(ctx, &mcp.CommandTransport{Command: exec.Command(h.self, StdioArg), TerminateDuration: time.Second})
		}
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", conn, err))
			continue
		}
		out.Conns = append(out.Conns, conn)
	}
	return out
}

// selfTestTimeout bounds the self-test's two calls.
const selfTestTimeout = 20 * time.Second

func callAlpha(ctx context.Context, t mcp.Transport) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpsandbox-selftest", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: Alpha, Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	return nil
}

// prepare switches to the client phase and writes the adapter's files in
// a HOME that it makes fresh.
func (h *Host) prepare(in PrepareIn) PrepareOut {
	h.ledger.set(PhaseClient, in.Nonce, nil)
	h.model.SetTool(in.Tool)
	var out PrepareOut
	if !filepath.IsAbs(in.Home) {
		out.Errors = append(out.Errors, fmt.Sprintf("HOME %q is not absolute", in.Home))
		return out
	}
	// Mkdir fails if it exists: a fresh HOME is one this made.
	if err := os.MkdirAll(filepath.Dir(in.Home), 0o755); err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("making HOME's parent: %v", err))
	}
	if err := os.Mkdir(in.Home, 0o700); err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("making a fresh HOME: %v", err))
	} else {
		out.Fresh = true
	}
	for _, f := range in.Files {
		if !filepath.IsAbs(f.Path) {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: not absolute", f.Path))
			continue
		}
		mode := os.FileMode(f.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		if err := os.WriteFile(f.Path, []byte(f.Content), mode.Perm()); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		out.Written = append(out.Written, f.Path)
	}
	return out
}

// runClient runs the client with stdin at end of file, its own process
// group, within the time bound; what its group leaves running is killed.
func runClient(ctx context.Context, in RunIn) RunOut {
	var out RunOut
	if len(in.Argv) == 0 {
		out.Error = "no client command"
		return out
	}
	timeout := time.Duration(in.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Minute
	}
	cmd := exec.Command(in.Argv[0], in.Argv[1:]...)
	cmd.Env, cmd.Dir = mergeEnv(os.Environ(), in.Env), in.Dir
	cmd.Stdin = nil // /dev/null: end of file at the first read
	stdout, stderr := &tailWriter{max: TailLimit}, &tailWriter{max: TailLimit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		out.Error = fmt.Sprintf("starting the client: %v", err)
		out.ExitCode = 127
		return out
	}
	out.Started = true
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		out.TimedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		out.Error = "the run ended"
	}
	// Whatever the client left in its group (a relay, a helper) goes too.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
	default:
		out.Error = err.Error()
	}
	out.Stdout, out.Stderr = stdout.tail(), stderr.tail()
	return out
}

// mergeEnv is base (the container's environment: the image's PATH and
// the like) with over's variables in place of its own, over's order after.
func mergeEnv(base, over []string) []string {
	set := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	var out []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	seen := map[string]int{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			out[i] = kv // the later wins
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// tailWriter keeps the last max bytes written and counts them all.
type tailWriter struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailWriter) tail() Tail {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Tail{Text: string(t.buf), Bytes: t.total, Truncated: t.total > int64(len(t.buf))}
}

func (h *Host) ledgerOut() LedgerOut {
	var out LedgerOut
	out.Entries, out.Dropped = h.ledger.snapshot()
	out.Turns, out.TurnsDropped = h.model.Turns()
	out.TurnsRefused = h.model.Refused()
	out.Ambiguities, out.AmbiguitiesOmitted, out.Unread = h.ledger.reading()
	if out.Entries == nil {
		out.Entries = []Entry{}
	}
	return out
}
