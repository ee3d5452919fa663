package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Tests that do nothing but scans of their own (runScan: containers of their
// own run, a temporary workspace) call t.Parallel, and so do their
// subtests when the test checks nothing after them: a scan mostly waits
// (container starts, settle and linger windows), so scans side by side
// overlap their waits. Go starts the parallel tests once every other test
// of the package has ended, so a test that sets the environment, counts
// or removes this process's containers or images, cleans, evicts or reaps
// stays serial and never runs beside them.

// apiScans lets one ChangesAPI scan of this process run at a time: its
// snapshots are the engine's work (a diff of the container, a stat per
// changed path), not a wait, and four side by side on a loaded engine
// (load 24-38) took the engine's calls past their bounds.
var apiScans sync.Mutex

// scanBound bounds a test's scan as the scan's own default --timeout
// does, not by a guess at how long it takes: on a loaded engine a
// ChangesAPI scan of the lying fixture took past 3 minutes (50 s idle).
const scanBound = 10 * time.Minute

// runScan runs a scan of the fixture server with the given tool sets and
// probes, checking that nothing is left behind.
func runScan(t *testing.T, cli *client.Client, opts scan.Options) (scan.Result, error) {
	t.Helper()
	if opts.Image == "" {
		opts.Image = sandboxtest.NodeImage(t, cli)
	}
	if opts.Agent == "none" {
		opts.Agent = ""
	} else if opts.Agent == "" {
		opts.Agent = sandboxtest.Agent(t)
	}
	if opts.Linger == 0 {
		opts.Linger = sandboxtest.Linger // tests wait a moment, not the default window
	}
	opts.RunID = label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, opts.RunID)
	if opts.Changes == sandbox.ChangesAPI {
		apiScans.Lock()
		defer apiScans.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), scanBound)
	defer cancel()
	res, err := scan.Run(ctx, cli, opts)
	// The observations' counts; verdicts are ci/verdict's, not tested here.
	res.Report.Finish()
	return res, err
}

func fixtureOpts(t *testing.T, sets ...string) scan.Options {
	return scan.Options{SessionOptions: sandbox.SessionOptions{
		Argv:   append([]string{sandboxtest.FixtureMount}, sets...),
		Mounts: []sandbox.Mount{sandboxtest.Fixture(t)},
	}}
}

func steps(t *testing.T, js string) []probes.Step {
	t.Helper()
	s, err := probes.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func toolByName(r *report.Report, name string) *report.Tool {
	for i := range r.Tools {
		if r.Tools[i].Name == name {
			return &r.Tools[i]
		}
	}
	return nil
}

// callsOf returns the calls of a tool, leaving out the automatic repeats
// of idempotent tools.
// callsOf is tool's calls, less the repeats and the boundary probes
// (TestBoundaryProbes checks those).
func callsOf(r *report.Report, tool string) []report.Call {
	var out []report.Call
	for _, c := range r.Calls {
		if c.Tool == tool && c.Source != "repeat" && c.Source != "boundary" {
			out = append(out, c)
		}
	}
	return out
}

func TestScanFixture(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest", "liar")
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
	if got := string(toolByName(r, "no_hints").Annotations); got != "null" {
		t.Errorf("no_hints annotations = %s, want null (not declared)", got)
	}
	// go-sdk sends readOnlyHint:false explicitly and leaves destructiveHint
	// out when nil: the report must tell the two apart.
	an := toolByName(r, "add_note")
	var raw map[string]any
	if err := json.Unmarshal(an.Annotations, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["readOnlyHint"] != false || an.Hints.ReadOnly == nil || *an.Hints.ReadOnly {
		t.Errorf("add_note readOnlyHint: raw %v, hints %v; want declared false", raw["readOnlyHint"], an.Hints.ReadOnly)
	}
	if h := toolByName(r, "lying_read").Hints; h.Destructive != nil || h.ReadOnly == nil || !*h.ReadOnly {
		t.Errorf("lying_read hints = %+v, want readOnly true, destructive not declared", h)
	}
	if c := callsOf(r, "read_file"); len(c) != 1 || c[0].Result != "seed\n" || c[0].Source != "probe" {
		t.Errorf("read_file calls = %+v", c)
	}
	if r.Calls[0].Tool != "read_file" || r.Calls[1].Tool != "echo" {
		t.Errorf("probes not called first, in file order: %s, %s", r.Calls[0].Tool, r.Calls[1].Tool)
	}
	for _, name := range []string{"lying_read", "tidy", "run_tests", "lookup", "background", "no_hints", "list_workspace", "add_note"} {
		if c := callsOf(r, name); len(c) != 1 || c[0].Source != "empty" || c[0].ErrorKind != "" {
			t.Errorf("%s calls = %+v, want one call with {}", name, c)
		}
	}
	if c := callsOf(r, "run_tests"); len(c) == 1 && !strings.Contains(c[0].Result, "tests passed") {
		t.Errorf("run_tests result %q: the shell did not run in the image", c[0].Result)
	}

	// The transcript holds every frame both ways, in order, with times.
	frames, dropped := res.Transcript.Frames()
	if dropped != 0 || len(frames) < 2*(len(r.Calls)+2) {
		t.Fatalf("transcript: %d frames, %d dropped", len(frames), dropped)
	}
	if frames[0].Dir != "send" || !bytes.Contains(frames[0].Message, []byte(`"server/discover"`)) {
		t.Errorf("first frame = %s %s, want the server/discover request", frames[0].Dir, frames[0].Message)
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].Time.Before(frames[i-1].Time) || frames[i].Seq != i+1 {
			t.Fatalf("frame %d out of order", i)
		}
	}

	var text bytes.Buffer
	if err := formats.WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/fixture-scan.txt", text.Bytes())
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// seedWorkspace makes a host workspace with files the liar tools delete,
// overwrite and write next to, plus a symlink and a read-only file.
func seedWorkspace(t *testing.T) string {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "data.json"), []byte(`{"a":1}`), 0o600))
	must(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o750))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "deeper", "x.bin"), []byte{0, 1, 2, 255}, 0o755))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link-out")))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "ro.txt"), []byte("read only"), 0o444))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tree records every path under dir with its type, mode and content hash.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + l
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			v += fmt.Sprintf(" %d %s %d", len(b), hex.EncodeToString(s[:]), info.ModTime().UnixNano())
		}
		m[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHostWorkspaceNeverModified(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	ws := seedWorkspace(t)
	before := tree(t, ws)
	opts := fixtureOpts(t, "honest", "liar")
	opts.Workspace = ws
	// tidy deletes seed.txt and overwrites data.json; lying_read and
	// add_note create files; the server sees all of it in /workspace.
	opts.Probes = steps(t, `{"tidy": {}, "lying_read": {}, "add_note": {"text": "n"}, "list_workspace": {}}`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if c := callsOf(res.Report, "tidy"); len(c) != 1 || !strings.Contains(c[0].Result, "deleted /workspace/seed.txt; overwrote /workspace/data.json") {
		t.Fatalf("tidy did not modify the sandbox workspace: %+v", c)
	}
	if c := callsOf(res.Report, "list_workspace"); len(c) != 1 || !strings.Contains(c[0].Result, "/workspace/tests/probe.spec.ts") || strings.Contains(c[0].Result, "seed.txt") {
		t.Fatalf("the server's view of /workspace is wrong: %+v", c)
	}
	if after := tree(t, ws); !reflect.DeepEqual(before, after) {
		t.Errorf("host workspace changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestHangingCallTimesOutAndScanGoesOn(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest", "hang", "crash")
	opts.Probes = steps(t, `{"hang": {}, "echo": {"text": "after"}}`)
	// Long enough that the crash call's end (the server gone) is seen
	// within it on a loaded machine (2 s was not, under load 35), short
	// enough for the hang's timeout not to weigh on the suite.
	opts.CallTimeout = 8 * time.Second
	start := time.Now()
	res, err := runScan(t, cli, opts)
	// crash requires nothing, so it runs after the probes and ends the scan.
	if !errors.Is(err, scan.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete from the crash tool", err)
	}
	r := res.Report
	if c := callsOf(r, "hang"); len(c) != 1 || c[0].ErrorKind != "timeout" {
		t.Errorf("hang = %+v, want a timeout", c)
	}
	if c := callsOf(r, "echo"); len(c) != 1 || c[0].Result != "echo: after" {
		t.Errorf("echo after hang = %+v", c)
	}
	if !hasProblem(r, "timeout") {
		t.Errorf("problems %+v lack the timeout", r.Problems)
	}
	if !hasProblem(r, "crash") || r.Complete {
		t.Errorf("crash not reported: %+v", r.Problems)
	}
	t.Logf("scan with a hanging call took %s", time.Since(start))
}

func hasProblem(r *report.Report, kind string) bool {
	for _, p := range r.Problems {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// TestCrashMidCallKeepsPartialReport, over stdio, streamable HTTP and
// HTTP+SSE: the server that dies during a call is a crash, the call a
// transport failure, whatever carried it.
func TestCrashMidCallKeepsPartialReport(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, tc := range []struct {
		transport sandbox.Transport
		serve     []string
	}{
		{sandbox.Transport{Kind: sandbox.TransportStdio}, nil},
		{sandbox.Transport{Kind: sandbox.TransportHTTP, Port: 3000}, []string{"--http=:3000"}},
		{sandbox.Transport{Kind: sandbox.TransportSSE, Port: 3000}, []string{"--sse=:3000"}},
	} {
		t.Run(tc.transport.Kind.String(), func(t *testing.T) {
			opts := fixtureOpts(t, append([]string{"honest", "crash"}, tc.serve...)...)
			opts.Transport = tc.transport
			crashMidCall(t, cli, opts)
		})
	}
}

func crashMidCall(t *testing.T, cli *client.Client, opts scan.Options) {
	opts.Probes = steps(t, `{"echo": {"text": "before"}, "crash": {}, "no_hints": {}}`)
	res, err := runScan(t, cli, opts)
	if !errors.Is(err, scan.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	r := res.Report
	if r.Complete || len(r.Tools) == 0 {
		t.Fatalf("complete=%v tools=%d", r.Complete, len(r.Tools))
	}
	if c := callsOf(r, "echo"); len(c) != 1 || c[0].Result != "echo: before" {
		t.Errorf("the call before the crash was lost: %+v", c)
	}
	if c := callsOf(r, "crash"); len(c) != 1 || c[0].ErrorKind != "transport" {
		t.Errorf("crash call = %+v", c)
	}
	if r.Server.ExitCode == nil || *r.Server.ExitCode != 3 {
		t.Errorf("exit code = %v, want 3", r.Server.ExitCode)
	}
	if !strings.Contains(r.Server.StderrTail, "crashing on purpose") {
		t.Errorf("stderr tail %q lacks the server's last words", r.Server.StderrTail)
	}
	notReached := false
	for _, n := range r.NotCalled {
		if n.Tool == "no_hints" && strings.Contains(n.Reason, "exited with code 3") {
			notReached = true
		}
	}
	if !notReached {
		t.Errorf("notCalled = %+v, want no_hints not reached", r.NotCalled)
	}
}

func TestGarbageOnStdoutIsDroppedAndCounted(t *testing.T) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest", "garbage", "--banner")
	opts.Probes = steps(t, `{"garbage": {}, "echo": {"text": "still here"}}`)
	opts.CallTimeout = 5 * time.Second
	res, _ := runScan(t, cli, opts)
	r := res.Report
	if c := callsOf(r, "echo"); len(c) != 1 || c[0].Result != "echo: still here" {
		t.Errorf("echo after garbage = %+v", c)
	}
	if r.Server.StdoutNoise < 3 || !hasProblem(r, "stdout-noise") {
		t.Errorf("stdout noise = %d %q, problems %+v", r.Server.StdoutNoise, r.Server.StdoutNoiseSample, r.Problems)
	}
}

func TestMissingImageAndCommand(t *testing.T) {
	cli := sandboxtest.Docker(t)
	for name, opts := range map[string]scan.Options{
		"image":   {SessionOptions: sandbox.SessionOptions{Image: "mcpsandbox/does-not-exist:latest", Argv: []string{"node"}}},
		"command": {SessionOptions: sandbox.SessionOptions{Argv: []string{"/no/such/server", "--stdio"}}},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := runScan(t, cli, opts)
			var ie *sandbox.InfraError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InfraError", err)
			}
			if ie.Fix == "" || res.Report == nil {
				t.Errorf("error %q names no fix, or no report", err)
			}
			t.Logf("message: %v", err)
		})
	}
}

func TestRealNPMServers(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	npm := sandboxtest.NPM(t)
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644))
	opts := scan.Options{
		SessionOptions: sandbox.SessionOptions{
			Argv:      []string{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-filesystem/dist/index.js", "/workspace"},
			Mounts:    []sandbox.Mount{npm},
			Workspace: ws,
		},
		Probes: steps(t, `{"read_text_file": {"path": "/workspace/a.txt"}, "write_file": {"path": "/workspace/b.txt", "content": "x"}}`),
	}
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	rt := toolByName(r, "read_text_file")
	if rt == nil || rt.Hints.ReadOnly == nil || !*rt.Hints.ReadOnly || !bytes.Contains(rt.Annotations, []byte(`"readOnlyHint":true`)) {
		t.Fatalf("read_text_file = %+v", rt)
	}
	if c := callsOf(r, "read_text_file"); len(c) != 1 || c[0].Result != "hello\n" {
		t.Errorf("read_text_file call = %+v", c)
	}
	if c := callsOf(r, "write_file"); len(c) != 1 || c[0].IsError || c[0].ErrorKind != "" {
		t.Errorf("write_file call = %+v", c)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write_file reached the host workspace: %v", err)
	}
	// Its allowed directories hold: every boundary probe is refused, none
	// is a finding.
	var probed int
	for _, c := range r.Calls {
		if c.Source == "boundary" {
			probed++
			if !c.IsError && c.ErrorKind == "" || c.Boundary.Returned {
				t.Errorf("boundary call %d %s %s not refused: %q", c.Seq, c.Tool, c.Arguments, c.Result)
			}
		}
	}
	fr := *r
	verdict.Finish(&fr, verdict.Config{})
	for _, f := range fr.Findings {
		if f.Rule == rules.PathEscape || f.Rule == rules.SsrfFollowed {
			t.Errorf("server-filesystem: %s", f.Message)
		}
	}
	if probed == 0 {
		t.Error("server-filesystem: no boundary call")
	}

	mem, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{
		Argv:   []string{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-memory/dist/index.js"},
		Mounts: []sandbox.Mount{npm},
	}})
	if err != nil {
		t.Fatalf("scan server-memory: %v", err)
	}
	if len(mem.Report.Tools) == 0 || len(mem.Report.Calls) == 0 {
		t.Errorf("server-memory: %d tools, %d calls", len(mem.Report.Tools), len(mem.Report.Calls))
	}
}

// TestEveryToolOfRealServersIsCalled: on server-filesystem and
// server-everything every tool is called with arguments its schema
// accepts, or listed as not called with a reason.
func TestEveryToolOfRealServersIsCalled(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	npm := sandboxtest.NPM(t)
	for _, srv := range [][]string{
		{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-filesystem/dist/index.js", "/workspace"},
		{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-everything/dist/index.js"},
	} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(srv[1]))), func(t *testing.T) {
			t.Parallel()
			res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Argv: srv, Mounts: []sandbox.Mount{npm}}})
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			reason := map[string]string{}
			for _, n := range r.NotCalled {
				reason[n.Tool] = n.Reason
			}
			for _, tool := range r.Tools {
				calls := callsOf(r, tool.Name)
				if len(calls) == 0 {
					if reason[tool.Name] == "" {
						t.Errorf("%s: neither called nor given a reason", tool.Name)
					}
					continue
				}
				for _, c := range calls {
					if err := probes.Validate(tool.InputSchema, c.Arguments); err != nil {
						t.Errorf("%s called with %s, which its schema rejects: %v", tool.Name, c.Arguments, err)
					}
					if c.ErrorKind == "transport" || c.ErrorKind == "client" {
						t.Errorf("%s: %s", tool.Name, c.Error)
					}
				}
			}
			t.Logf("%d tools, %d calls, %d not called", len(r.Tools), len(r.Calls), len(r.NotCalled))
		})
	}
}

// TestCallIsolation: with --isolation call every call starts from the same
// state, so a second add_note makes note-1 again; the report says which
// mode ran.
func TestCallIsolation(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Isolation = sandbox.IsolationCall
	opts.Probes = steps(t, `[{"tool":"add_note","arguments":{"text":"a"}},{"tool":"add_note","arguments":{"text":"b"}},{"tool":"echo","arguments":{"text":"x"}}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if r.Sandbox.Isolation != "call" || !r.Complete {
		t.Fatalf("isolation %q complete %v problems %+v", r.Sandbox.Isolation, r.Complete, r.Problems)
	}
	notes := callsOf(r, "add_note")
	if len(notes) != 2 {
		t.Fatalf("add_note calls = %d", len(notes))
	}
	for _, c := range notes {
		if c.Result != "wrote /workspace/notes/note-1.txt" {
			t.Errorf("call %d: %q; each call should start from the same state", c.Seq, c.Result)
		}
	}
	seqs := []int{}
	for _, c := range r.Calls {
		seqs = append(seqs, c.Seq)
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("calls numbered %v", seqs)
		}
	}
}
