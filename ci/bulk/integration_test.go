package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// countingScanner counts the scans of the scanner it wraps.
type countingScanner struct {
	Scanner
	mu sync.Mutex
	n  int
}

func (c *countingScanner) Scan(ctx context.Context, j Job) (*report.Report, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Scanner.Scan(ctx, j)
}

// integrationOptions scans with the real engine, the fixture packages
// from reg installed with the real npm (scripts off) into a fresh cache.
func integrationOptions(t *testing.T, cli *client.Client, reg NPMRegistry, log *syncBuffer) Options {
	t.Helper()
	base := scan.Options{SessionOptions: sandbox.SessionOptions{Image: sandboxtest.NodeImage(t, cli), Agent: sandboxtest.Agent(t), Changes: sandbox.ChangesAuto, Network: sandbox.DefaultNetwork,
		User: images.User(), Limits: sandbox.DefaultLimits(), ClientInfo: sandbox.DefaultClientInfo(), Disk: sandbox.DefaultDisk, DiskInterval: sandbox.DefaultDiskInterval,
		StartTimeout: 60 * time.Second, CallTimeout: 10 * time.Second}, // the start as scan's default bounds it: 20 s was passed under load 27
		Isolation: sandbox.IsolationSession, Linger: sandboxtest.Linger, NoBoundary: true}
	if log != nil {
		base.Log = log
	}
	return Options{Results: t.TempDir(), Jobs: 2, Timeout: 90 * time.Second, FetchTimeout: time.Minute,
		FailOn:     verdict.FailOn{Severity: report.SeverityError},
		Installers: map[Kind]Installer{KindNPM: NPM{Cache: t.TempDir(), Registry: reg, Node: "20.0.0"}},
		Scanner:    &countingScanner{Scanner: GateScanner{Engine: cli, Base: base, NoReplay: true, Version: "test"}}}
}

// docker is sandboxtest.Docker, skipped under -race: the engine-bound
// tests run once in make test, without it.
func docker(t *testing.T) *client.Client {
	t.Helper()
	if raceEnabled {
		t.Skip("integration test: skipped under -race (make test runs it without)")
	}
	return sandboxtest.Docker(t)
}

// noContainersOfThisProcess fails the test when a container this test
// process started is left.
func noContainersOfThisProcess(t *testing.T, cli *client.Client) {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	prefix := fmt.Sprintf("%s:%d:", host, os.Getpid())
	for _, c := range list {
		if strings.HasPrefix(c.Labels[label.Owner], prefix) {
			t.Errorf("container %.12s is left", c.ID)
		}
	}
}

// TestBulkScansPackedFixtures runs a batch of a locally packed npm
// fixture (never published) in its several behaviours, with specs that
// are not scanned, through the real npm install and the real engine; then
// runs it again, which scans nothing.
func TestBulkScansPackedFixtures(t *testing.T) {
	cli := docker(t)
	reg := packFixtures(t, "echo-mcp")
	list := `npm:echo-mcp
npm:echo-mcp -- liar
npm:echo-mcp secret:API_KEY -- exfil
npm:echo-mcp -- crash
npm:no-such-fixture
pypi:mcp-server-fetch
npm:echo-mcp
npm:echo-mcp -- ambiguous
`
	specs, bad := ParseList("list.txt", strings.NewReader(list))
	sj := `{"name": "io.example/db", "packages": [{"registryType": "npm", "identifier": "echo-mcp", "version": "1.0.0", "transport": {"type": "stdio"},
		"environmentVariables": [{"name": "DATABASE_PATH", "isRequired": true}]}]}`
	more, bad2 := Parse("server.json", strings.NewReader(sj))
	specs, dups := Dedupe(append(specs, more...))
	if len(bad)+len(bad2) != 0 || len(dups) != 1 || dups[0].Where != "list.txt:7" {
		t.Fatalf("inputs: bad %v %v dups %v", bad, bad2, dups)
	}
	o := integrationOptions(t, cli, reg, nil)
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusOK, StatusFindings, StatusFindings, StatusFailedStart, StatusFailedFetch, StatusNotScannedHere, StatusFindings, StatusNeedsConfig}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i, r := range res {
		if r.Status != want[i] {
			t.Errorf("%s: %s (%s), want %s; by rule %v", r.Spec, r.Status, r.Why, want[i], r.ByRule)
		}
	}
	honest := res[0]
	if honest.Version != "1.0.0" || !strings.HasPrefix(honest.Integrity, "sha512-") || honest.Entry == nil || honest.Entry.Bin != "echo-mcp" ||
		honest.Tools != 1 || honest.Exercised != 1 || honest.Findings != 0 || !honest.Complete {
		t.Errorf("honest: %+v", honest)
	}
	if len(honest.Notes) != 1 || !strings.Contains(honest.Notes[0], "scanned anyway") {
		t.Errorf("honest's notes %q: want the engines range marked", honest.Notes)
	}
	if liar := res[1]; len(liar.ToolRows) != 1 || len(liar.ToolRows[0].Contradicted) == 0 || liar.ToolRows[0].Contradicted[0] != "readOnlyHint" {
		t.Errorf("liar: by rule %v, tools %+v", liar.ByRule, liar.ToolRows)
	}
	if amb := res[6]; amb.ByRule["ambiguous-message"] == 0 || amb.ByRule["readonly-writes"] == 0 {
		t.Errorf("ambiguous: by rule %v: want ambiguous-message, and readonly-writes as JSON.parse reads the hint", amb.ByRule)
	}
	if exfil := res[2]; exfil.ByRule["secret-exfiltration"] == 0 {
		t.Errorf("exfil: by rule %v: the honeytoken in API_KEY was not caught leaving", exfil.ByRule)
	}
	for _, r := range res[:4] {
		b, err := os.ReadFile(filepath.Join(o.Results, r.Report))
		var rep report.Report
		if err != nil || json.Unmarshal(b, &rep) != nil || rep.SchemaVersion != report.SchemaVersion {
			t.Errorf("%s: report %q unreadable: %v", r.Spec, r.Report, err)
		}
		if bytes.Contains(b, []byte("API_KEY=")) {
			t.Errorf("%s: report names the secret's value", r.Spec)
		}
	}
	if err := WriteSummaries(o.Results, Summarize(res, dups)); err != nil {
		t.Fatal(err)
	}
	noContainersOfThisProcess(t, cli)

	// The same batch again: every package is done, nothing is scanned.
	sc := o.Scanner.(*countingScanner)
	sc.n = 0
	again, err := Run(context.Background(), specs, o)
	if err != nil || sc.n != 0 || len(again) != len(res) {
		t.Errorf("resumed: %v, %d scans, %d results", err, sc.n, len(again))
	}
}

// syncBuffer is a progress log the test reads while the scan writes it.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func(string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for _, l := range strings.Split(string(p), "\n") {
		if s.onLine != nil {
			s.onLine(l)
		}
	}
	return len(p), nil
}

// TestBulkInterruptedMidCall cancels the batch while a tool hangs: the
// package is neither recorded nor reported, and no container is left.
func TestBulkInterruptedMidCall(t *testing.T) {
	cli := docker(t)
	reg := packFixtures(t, "echo-mcp")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	log := &syncBuffer{onLine: func(l string) {
		if strings.HasPrefix(l, "call 1:") {
			once.Do(func() { time.AfterFunc(300*time.Millisecond, cancel) }) // let the request reach the server
		}
	}}
	o := integrationOptions(t, cli, reg, log)
	specs, _ := ParseList("l", strings.NewReader("npm:echo-mcp -- hang\n"))
	res, err := Run(ctx, specs, o)
	if !errors.Is(err, ErrInterrupted) || len(res) != 0 {
		t.Fatalf("got %v, %+v; want ErrInterrupted and no result", err, res)
	}
	reports, _ := filepath.Glob(filepath.Join(o.Results, reportsDir, "*"))
	st, _ := LoadState(o.Results)
	if len(reports) != 0 || len(st) != 0 {
		t.Errorf("interrupted package recorded: reports %q, state %v", reports, st)
	}
	noContainersOfThisProcess(t, cli)
}

// TestBulkScansAnImage scans image specs: a local image whose
// entrypoint and command are the fixture server's, with the image's
// command and with the spec's arguments; an image not in the engine is
// failed-fetch (never pulled).
func TestBulkScansAnImage(t *testing.T) {
	cli := docker(t)
	fx := sandboxtest.Fixture(t)
	img := sandboxtest.ImageWith(t, cli, []string{`ENTRYPOINT ["/srv/server"]`, `CMD ["honest"]`},
		sandboxtest.ImageFile{Path: "srv", Dir: true, Mode: 0o755}, sandboxtest.ImageFile{Path: "srv/server", Mode: 0o755, Source: fx.Source})
	o := integrationOptions(t, cli, nil, nil)
	o.Installers = map[Kind]Installer{KindImage: EngineImages(cli)}
	specs, bad := ParseList("l", strings.NewReader("image:"+img+"\nimage:"+img+" -- honest liar\nimage:mcpsandbox/no-such-image:1\n"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusOK, StatusFindings, StatusFailedFetch}
	for i, r := range res {
		if r.Status != want[i] {
			t.Errorf("%s: %s (%s), want %s", r.Spec, r.Status, r.Why, want[i])
		}
	}
	if len(res) == 3 && (res[0].Tools == 0 || !strings.Contains(res[2].Why, "never pulled")) {
		t.Errorf("image rows: %+v", res)
	}
	noContainersOfThisProcess(t, cli)
}

// TestBulkEntryChoice: a package whose bin named like it is a CLI that
// exits 0 is started as a user would start it: as its README's client
// configuration says (the other bin); with a README that says nothing,
// by its other bin, the first that answers initialize, the result saying
// what was tried.
func TestBulkEntryChoice(t *testing.T) {
	cli := docker(t)
	server, err := os.ReadFile("testdata/echo-mcp/server.js")
	if err != nil {
		t.Fatal(err)
	}
	cliJS := "#!/usr/bin/env node\n// The package's CLI: it prints its usage and exits 0.\nconsole.log('usage: cli <command>');\n"
	pkg := func(name, readme string) string {
		files := map[string]string{
			"package.json": `{"name": "` + name + `", "version": "1.0.0", "bin": {"` + name + `": "cli.js", "` + name + `-server": "server.js"}}`,
			"cli.js":       cliJS, "server.js": string(server),
		}
		if readme != "" {
			files["README.md"] = readme
		}
		return packDir(t, files)
	}
	readme := "# cli-first\n\nAdd to your client's configuration:\n\n```json\n" +
		`{"mcpServers": {"cli-first": {"command": "npx", "args": ["-y", "-p", "cli-first-mcp", "cli-first-mcp-server"]}}}` + "\n```\n"
	list := "tgz:" + pkg("cli-first-mcp", readme) + "\n" + "tgz:" + pkg("cli-only-mcp", "") + "\n"
	specs, bad := ParseList("list.txt", strings.NewReader(list))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	res, err := Run(context.Background(), specs, integrationOptions(t, cli, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ bin, why string }{
		{"cli-first-mcp-server", "the bin the README's client configuration runs"},
		{"cli-only-mcp-server", "cli-only-mcp did not start"},
	} {
		r := res[i]
		if r.Status != StatusOK || r.Entry == nil || r.Entry.Bin != want.bin || !strings.Contains(r.Entry.Why, want.why) || r.Exercised != 1 {
			t.Errorf("%s: %s (%s), entry %+v, exercised %d", r.Spec, r.Status, r.Why, r.Entry, r.Exercised)
		}
	}
}
