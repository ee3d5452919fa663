package sandbox

import (
	"io"
	"strings"
	"testing"
)

// TestWhyLinePicksTheReason: from a real server's stderr as it dies, the
// line that says why, not the first nor the last.
func TestWhyLinePicksTheReason(t *testing.T) {
	for _, tc := range []struct{ name, stderr, want string }{
		{"node", "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/opt/x.js'\n    at Module._resolveFilename\n", "Error: Cannot find module '/opt/x.js'"},
		{"python", "Traceback (most recent call last):\n  File \"/opt/s.py\", line 1, in <module>\n    import mcp\nModuleNotFoundError: No module named 'mcp'\n", "ModuleNotFoundError: No module named 'mcp'"},
		{"npm", "npm WARN config production Use `--omit=dev` instead.\nnpm ERR! code E404\n", "npm ERR! code E404"},
		{"shell", "\n\nsh: 1: mcp-server: not found\n", "sh: 1: mcp-server: not found"},
		{"go", "goroutine 1 [running]:\npanic: runtime error\n", "panic: runtime error"},
		{"no error word", "\n  Usage: server --root DIR\n  more\n", "Usage: server --root DIR"},
		{"nothing", "\n \n", ""},
	} {
		if got := whyLine(tc.stderr); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTailBufferKeepsTheHead: the first stderrHeadLimit bytes are kept
// whatever comes after, with the tail.
func TestTailBufferKeepsTheHead(t *testing.T) {
	b := newTailBuffer(16)
	io.WriteString(b, "Error: the first line\n")
	io.WriteString(b, strings.Repeat("noise\n", 3000))
	io.WriteString(b, "last words\n")
	head := b.start()
	tail, total, trunc := b.snapshot()
	if len(head) != stderrHeadLimit || !strings.HasPrefix(head, "Error: the first line\nnoise\n") || tail != "oise\nlast words\n" || total != 22+18000+11 || !trunc {
		t.Errorf("head %d bytes %q..., tail %q, total %d, truncated %v", len(head), head[:30], tail, total, trunc)
	}
}

// TestExitBeforeInitializeSays: the message names the exit and the
// reason; the memory limit is named as such.
func TestExitBeforeInitializeSays(t *testing.T) {
	for _, tc := range []struct {
		e    ExitBeforeInitialize
		want string
	}{
		{ExitBeforeInitialize{Code: 3, Why: "Error: Cannot find module"}, "server exited with code 3 before initialize: Error: Cannot find module"},
		{ExitBeforeInitialize{Code: 0}, "server exited with code 0 before initialize (its stderr is empty)"},
		{ExitBeforeInitialize{Code: 137, OOMKilled: true, Why: "x"}, "server was killed by the memory limit (exit code 137) before initialize: x"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
