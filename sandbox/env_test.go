package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestSeededProjectIsAGitRepo: a server that runs git in the canary
// project finds a clone with its history (redacted in the report: the
// ids and the user are roles), a clean tree, a sound repository; and
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
	res, err := scan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	c := callsOf(res.Report, "git_history")
	if len(c) != 1 {
		t.Fatalf("calls %+v", res.Report.Calls)
	}
	for _, want := range []string{
		"$ git log --format=%h %an %ad %s --date=iso (<nil>)\n<git-commit-4:short> <git-user> 2025-03-12 14:27:19 +0100 Add default config\n",
		"<git-commit-1:short> <git-user> 2025-03-03 09:14:07 +0100 Initial commit\n",
		"$ git status --porcelain --branch (<nil>)\n## main...origin/main\n\n",
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
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "env")
	opts.Network = sandbox.NetworkSinkhole
	opts.Probes = steps(t, `[{"tool":"fetch_page","arguments":{"url":"http://example.com/"}},{"tool":"fetch_page","arguments":{"url":"http://example.com/data.json"}}]`)
	res, err := scan(t, cli, opts)
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
