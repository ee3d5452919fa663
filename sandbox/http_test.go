package sandbox_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestScanOverHTTP scans the fixture server over streamable HTTP and over
// HTTP+SSE, on a fixed port and on one read from what it prints, with a
// header it requires: the tools, the calls, their effects and the
// transcript are what they are over stdio (TestScanFixture).
func TestScanOverHTTP(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	bearer := http.Header{"Authorization": {"Bearer t0k"}}
	for _, tc := range []struct {
		name      string
		transport sandbox.Transport
		serve     []string
		endpoint  string // "" when the port is the kernel's choice
	}{
		{"http", sandbox.Transport{Kind: sandbox.TransportHTTP, Port: 3000}, []string{"--http=127.0.0.1:3000"}, "http://localhost:3000/mcp"},
		{"http auto with a header", sandbox.Transport{Kind: sandbox.TransportHTTP, Headers: bearer},
			[]string{"--http=:0", "--want-header=Authorization: Bearer t0k"}, ""},
		{"sse", sandbox.Transport{Kind: sandbox.TransportSSE, Port: 3000}, []string{"--sse=127.0.0.1:3000"}, "http://localhost:3000/sse"},
		{"sse auto", sandbox.Transport{Kind: sandbox.TransportSSE}, []string{"--sse=:0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, append([]string{"honest", "liar"}, tc.serve...)...)
			opts.Transport = tc.transport
			opts.Probes = steps(t, `{"read_file": {"path": "seed.txt"}, "echo": {"text": "hi"}}`)
			opts.Workspace = seedWorkspace(t)
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			if !r.Complete || r.Summary.Problems != 0 {
				t.Fatalf("complete=%v problems=%+v", r.Complete, r.Problems)
			}
			if r.Server.Transport != tc.transport.Kind.String() || (tc.endpoint != "" && r.Server.Endpoint != tc.endpoint) || !strings.HasPrefix(r.Server.Endpoint, "http://localhost:") {
				t.Errorf("server transport %q endpoint %q, want %s %q", r.Server.Transport, r.Server.Endpoint, tc.transport.Kind, tc.endpoint)
			}
			if c := callsOf(r, "read_file"); len(c) != 1 || c[0].Result != "seed\n" || c[0].Source != "probe" {
				t.Errorf("read_file calls = %+v", c)
			}
			for _, name := range []string{"lying_read", "tidy", "run_tests", "lookup", "background", "no_hints", "list_workspace", "add_note"} {
				if c := callsOf(r, name); len(c) != 1 || c[0].Source != "empty" || c[0].ErrorKind != "" {
					t.Errorf("%s calls = %+v, want one call with {}", name, c)
				}
			}
			// The lies show as they do over stdio: lying_read's writes are
			// its call's, the tidy's deletion too.
			if c := callsOf(r, "lying_read"); len(c) != 1 || !hasFile(c[0].Effects, "/workspace/tests/probe.spec.ts") || !hasFile(c[0].Effects, "/tmp/cache/state.json") {
				t.Errorf("lying_read's writes are not its call's: %+v", c)
			}
			if c := callsOf(r, "tidy"); len(c) != 1 || !hasFile(c[0].Effects, "/workspace/seed.txt") {
				t.Errorf("tidy's deletion is not its call's: %+v", c)
			}
			if c := callsOf(r, "echo"); len(c) != 1 || len(c[0].Effects.Files)+len(c[0].Effects.Processes)+len(c[0].Effects.Network) != 0 {
				t.Errorf("echo has effects: %+v", c)
			}
			frames, dropped := res.Transcript.Frames()
			if dropped != 0 || len(frames) < 2*(len(r.Calls)+2) {
				t.Fatalf("transcript: %d frames, %d dropped", len(frames), dropped)
			}
			// The handshake opens with server/discover at the newest version
			// (see docs/wire.md, Protocol versions), over HTTP as over stdio.
			if frames[0].Dir != "send" || !bytes.Contains(frames[0].Message, []byte(`"server/discover"`)) {
				t.Errorf("first frame = %s %s, want the server/discover request", frames[0].Dir, frames[0].Message)
			}
		})
	}
}

func hasFile(e report.Effects, path string) bool {
	for _, f := range e.Files {
		if f.Path == path {
			return true
		}
	}
	return false
}

// TestServerThatNeverOpensItsPort: a server that never listens (here a
// stdio server, scanned over HTTP) ends the scan within --start-timeout
// with an error that says what was waited for and what the server said.
func TestServerThatNeverOpensItsPort(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, tc := range []struct {
		name string
		port int
		want []string
	}{
		{"fixed port", 3000, []string{"did not accept connections on port 3000", "http://localhost:3000/mcp", "--start-timeout 10s", "fixture server starting"}},
		{"auto", 0, []string{"printed no port", "--start-timeout 10s", "fixture server starting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "--banner", "honest")
			opts.Transport = sandbox.Transport{Kind: sandbox.TransportHTTP, Port: tc.port}
			// The container starts within it on a busy engine (3 s was
			// passed under load 27: the start, not the port, timed out).
			opts.StartTimeout = 10 * time.Second
			res, err := runScan(t, cli, opts)
			if !errors.Is(err, sandbox.ErrServerStart) {
				t.Fatalf("scan: %v, want ErrServerStart", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if r := res.Report; r.Complete || len(r.Problems) == 0 || r.Problems[0].Kind != "timeout" {
				t.Errorf("complete %v problems %+v, want a timeout problem", r.Complete, r.Problems)
			}
		})
	}
}

// TestRealServerOverStreamableHTTP scans server-everything in its
// streamableHttp mode, its port read from what it prints: every tool is
// listed and called as over stdio, none fails on the transport.
func TestRealServerOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	npm := sandboxtest.NPM(t)
	res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{
		Argv:      []string{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-everything/dist/index.js", "streamableHttp"},
		Mounts:    []sandbox.Mount{npm},
		Transport: sandbox.Transport{Kind: sandbox.TransportHTTP},
	}})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if r.Server.Endpoint != "http://localhost:3001/mcp" || len(r.Tools) == 0 || len(r.Calls) == 0 {
		t.Fatalf("endpoint %q, %d tools, %d calls", r.Server.Endpoint, len(r.Tools), len(r.Calls))
	}
	for _, c := range r.Calls {
		if c.ErrorKind == "transport" || c.ErrorKind == "client" {
			t.Errorf("call %d %s: %s", c.Seq, c.Tool, c.Error)
		}
	}
	t.Logf("%d tools, %d calls, %d not called, %d reads", len(r.Tools), len(r.Calls), len(r.NotCalled), len(r.Reads))
}

// TestHTTPServerThatWantsAToken: a server that answers 401 without the
// header it wants is a failed start that says how to send one.
func TestHTTPServerThatWantsAToken(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest", "--http=:3000", "--want-header=Authorization: Bearer t0k")
	opts.Transport = sandbox.Transport{Kind: sandbox.TransportHTTP, Port: 3000}
	res, err := runScan(t, cli, opts)
	if !errors.Is(err, sandbox.ErrServerStart) || !strings.Contains(err.Error(), "Unauthorized") || !strings.Contains(err.Error(), "--header 'Authorization: Bearer ...'") {
		t.Fatalf("scan: %v, want ErrServerStart saying Unauthorized and --header", err)
	}
	if p := res.Report.Problems; len(p) == 0 || p[0].Kind != "protocol" || !strings.Contains(p[0].Message, "--header") {
		t.Errorf("problems %+v", p)
	}
}
