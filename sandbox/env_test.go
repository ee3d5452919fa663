package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestSeededProjectIsAGitRepo: a server that runs git in the canary
// project finds a clone with its history (redacted in the report: the
// ids and the user are roles), work in progress (a staged file), a sound
// repository; and
// running `git status` there writes nothing, so a read-only tool that
// does stays read-only.
func TestSeededProjectIsAGitRepo(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img, err := images.Build(context.Background(), cli, "node", images.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := sandboxtest.Output(t, cli, img.Ref, "sh", "-c", "command -v git"); out == "" {
		t.Skip("the node image has no git (the host has none)")
	}
	opts := fixtureOpts(t, "env")
	opts.Image = img.Ref
	opts.Probes = steps(t, `[{"tool":"git_history"}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	c := callsOf(res.Report, "git_history")
	if len(c) != 1 {
		t.Fatalf("calls %+v", res.Report.Calls)
	}
	for _, want := range []string{
		"$ git log --format=%h %an %ad %s --date=iso (<nil>)\n<git-commit-6:short> <git-user> 2025-03-19 15:48:02 +0100 Add handbook, metrics, assets, a notebook and the 1.4.2 release\n",
		"<git-commit-5:short> <git-user> 2025-03-17 10:02:46 +0100 Add design overview\n",
		"<git-commit-4:short> <git-user> 2025-03-12 14:27:19 +0100 Add default config\n",
		"<git-commit-1:short> <git-user> 2025-03-03 09:14:07 +0100 Initial commit\n",
		"$ git status --porcelain --branch (<nil>)\n## main...origin/main\nA  CHANGELOG.md\n\n",
		"$ git fsck --no-dangling (<nil>)",
	} {
		if !strings.Contains(c[0].Result, want) {
			t.Errorf("git_history lacks %q:\n%s", want, c[0].Result)
		}
	}
	if n := len(c[0].Effects.Files); n != 0 {
		t.Errorf("git log, status and fsck changed %d files: %+v", n, c[0].Effects.Files)
	}
	if len(res.Report.Findings) != 0 {
		t.Errorf("findings on a read-only git tool: %+v", res.Report.Findings)
	}
}

// TestSinkholeServesAPage: in sinkhole mode a fetch of an outside page
// gets 200 and a small page (HTML, or JSON when asked), the request is
// recorded, and nothing leaves: every connection went to the agent.
func TestSinkholeServesAPage(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "env")
	opts.Network = sandbox.NetworkSinkhole
	opts.Probes = steps(t, `[{"tool":"fetch_page","arguments":{"url":"http://example.com/"}},{"tool":"fetch_page","arguments":{"url":"http://example.com/data.json"}}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	calls := callsOf(res.Report, "fetch_page")
	if len(calls) != 2 {
		t.Fatalf("calls %+v", res.Report.Calls)
	}
	for i, want := range []string{"status: 200 OK\ncontent-type: text/html; charset=utf-8\n\n<!doctype html>", "status: 200 OK\ncontent-type: application/json\n\n{\"status\":\"ok\""} {
		if !strings.HasPrefix(calls[i].Result, want) {
			t.Errorf("fetch %d: %q, want it to start %q", i, calls[i].Result, want)
		}
	}
	if !strings.Contains(calls[0].Result, "<h1>Welcome</h1>") {
		t.Errorf("no page body: %q", calls[0].Result)
	}
	got := netBrief(calls[0])
	for _, want := range []string{"dns example.com sinkholed", "http GET example.com/"} {
		if !has(got, want) {
			t.Errorf("fetch network lacks %q: %q", want, got)
		}
	}
	for _, c := range calls {
		for _, n := range c.Effects.Network {
			if n.Kind == "connect" && !n.Loopback && !strings.HasPrefix(n.Result, "sinkholed") {
				t.Errorf("a connection that was not sinkholed: %+v", n)
			}
		}
	}
}

// TestRealServerWritesNextToItsCode: server-memory keeps its graph in
// dist/memory.jsonl, next to its code. Given as --package, its code is
// writable copy-on-write: the write succeeds, is the call's file effect,
// and the host copy is untouched; given as --mount, it stays read-only
// and the write fails.
func TestRealServerWritesNextToItsCode(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	npm := sandboxtest.NPM(t)
	server := []string{"node", sandboxtest.NPMMount + "/@modelcontextprotocol/server-memory/dist/index.js"}
	memory := sandboxtest.NPMMount + "/@modelcontextprotocol/server-memory/dist/memory.jsonl"
	probe := `[{"tool":"create_entities","arguments":{"entities":[{"name":"a","entityType":"t","observations":["o"]}]}}]`

	res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Argv: server, Package: npm.Source, PackageTarget: sandboxtest.NPMMount}, Probes: steps(t, probe)})
	if err != nil {
		t.Fatalf("scan --package: %v", err)
	}
	c := callsOf(res.Report, "create_entities")
	if len(c) != 1 || c[0].IsError || c[0].Error != "" {
		t.Fatalf("--package: create_entities = %+v", c)
	}
	written := false
	for _, f := range c[0].Effects.Files {
		written = written || f.Path == memory
	}
	if !written || res.Report.Sandbox.Package != sandboxtest.NPMMount {
		t.Errorf("--package: the write next to the code is not an effect: %+v (package %q)", c[0].Effects.Files, res.Report.Sandbox.Package)
	}
	if _, err := os.Stat(filepath.Join(npm.Source, "@modelcontextprotocol/server-memory/dist/memory.jsonl")); err == nil {
		t.Error("the write reached the host's package directory")
	}

	res, err = runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Argv: server, Mounts: []sandbox.Mount{npm}}, Probes: steps(t, probe)})
	if err != nil {
		t.Fatalf("scan --mount: %v", err)
	}
	c = callsOf(res.Report, "create_entities")
	if len(c) != 1 || !(c[0].IsError || c[0].Error != "") || !strings.Contains(c[0].Result+c[0].Error, "read-only") {
		t.Errorf("--mount: create_entities = %+v; want a read-only failure", c)
	}
}
