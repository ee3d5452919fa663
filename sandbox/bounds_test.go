package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// problemsOf returns the problems of kind.
func problemsOf(r *report.Report, kind string) []report.Problem {
	var out []report.Problem
	for _, p := range r.Problems {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// TestBoundedRunnerHostileServer: a server that sends a result over the
// message bound, one nested past the depth bound, a notification over
// the bound, a schema over the schema bound and a flood of stderr gets a
// complete scan: each refusal is a protocol-bound problem where it
// happened, the results are counted and hashed, the session goes on (a
// later call is answered), nothing is blamed on the server's exit.
func TestBoundedRunnerHostileServer(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "flood", "result-bytes=200000", "depth=80", "notify-bytes=100000", "schema-bytes=5000", "stderr-bytes=300000")
	opts.Probes = steps(t, `[{"tool": "big"}, {"tool": "deep"}, {"tool": "chatty"}, {"tool": "echo"}]`)
	opts.Bounds = sandbox.Bounds{MaxMessage: 64 << 10, MaxDepth: 50, MaxSchema: 2048}
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if !r.Complete || len(problemsOf(r, "crash")) > 0 {
		t.Fatalf("complete=%v problems=%+v", r.Complete, r.Problems)
	}
	byTool := map[string]report.Call{}
	for _, c := range r.Calls {
		byTool[c.Tool] = c
	}
	big := byTool["big"]
	if big.ErrorKind != "client" || !strings.Contains(big.Error, "message size bound (65536 bytes)") || big.ResultBytes < 200000 || len(big.ResultSha256) != 64 {
		t.Errorf("big: %+v", big)
	}
	if deep := byTool["deep"]; deep.ErrorKind != "client" || !strings.Contains(deep.Error, "nesting depth bound (50)") {
		t.Errorf("deep: %+v", deep)
	}
	if c := byTool["chatty"]; c.Result != "chatted" || c.ErrorKind != "" {
		t.Errorf("chatty: %+v, want its answer (its notification dropped)", c)
	}
	if c := byTool["echo"]; c.Result != "echo" || c.ErrorKind != "" {
		t.Errorf("echo: %+v, want its answer: the session goes on", c)
	}
	if r.Server.MessagesRefused != 3 {
		t.Errorf("messagesRefused %d, want 3", r.Server.MessagesRefused)
	}
	pb := problemsOf(r, sandbox.ProblemProtocolBound)
	var onCalls []int
	var schema, elsewhere bool
	for _, p := range pb {
		if p.Call > 0 {
			onCalls = append(onCalls, p.Call)
		}
		schema = schema || strings.Contains(p.Message, "schema bound (2048 bytes)")
		elsewhere = elsewhere || strings.Contains(p.Message, `answer no request`) && strings.Contains(p.Message, `"notifications/message"`)
	}
	if len(onCalls) != 2 || onCalls[0] != big.Seq || onCalls[1] != byTool["deep"].Seq || !schema || !elsewhere {
		t.Errorf("protocol-bound problems %+v", pb)
	}
	wide := toolByName(r, "wide_schema")
	if wide == nil || !strings.Contains(string(wide.InputSchema), "over the schema bound") || len(wide.InputSchema) > 2048 {
		t.Fatalf("wide_schema: %+v", wide)
	}
	if _, called := byTool["wide_schema"]; called || !r.Server.ToolListTruncated {
		t.Errorf("wide_schema called %v, toolListTruncated %v: a tool left uncalled over a bound is a cut list", called, r.Server.ToolListTruncated)
	}
	if r.Server.StderrBytes < 300000 || !r.Server.StderrTruncated || len(r.Server.StderrTail) != 64<<10 {
		t.Errorf("stderr: %d bytes, truncated %v, tail %d", r.Server.StderrBytes, r.Server.StderrTruncated, len(r.Server.StderrTail))
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// TestToolListBounds: the tool list is cut at each of its bounds (pages,
// bytes in all, tools, a page refused on the wire); what came before is
// kept, the report says so (toolListTruncated and a protocol-bound problem),
// and the scan goes on with the tools kept.
func TestToolListBounds(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, c := range []struct {
		name   string
		args   []string
		bounds sandbox.Bounds
		tools  int // tools kept
		says   string
	}{
		{"pages", []string{"pages=5", "page-bytes=100"}, sandbox.Bounds{MaxToolPages: 3}, 3, "more than 3 pages"},
		{"bytes", []string{"pages=5", "page-bytes=1000"}, sandbox.Bounds{MaxToolListBytes: 2500}, 2, "passed 2500 bytes"},
		{"tools", []string{"pages=3", "tools=15", "page-bytes=1500"}, sandbox.Bounds{MaxTools: 20}, 20, "more than 20 tools"},
		{"refused page", []string{"pages=3", "page-bytes=100000"}, sandbox.Bounds{MaxMessage: 64 << 10}, 0, "page 1 of tools/list: a message of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fixtureOpts(t, append([]string{"flood"}, c.args...)...)
			opts.Bounds = c.bounds
			opts.Probes = steps(t, `[]`)
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			if len(r.Tools) != c.tools || !r.Server.ToolListTruncated {
				t.Errorf("%d tools kept, toolListTruncated %v; want %d, true", len(r.Tools), r.Server.ToolListTruncated, c.tools)
			}
			found := false
			for _, p := range problemsOf(r, sandbox.ProblemProtocolBound) {
				found = found || strings.Contains(p.Message, "the tool list was cut: ") && strings.Contains(p.Message, c.says)
			}
			if !found || !r.Complete {
				t.Errorf("complete %v, problems %+v; want the list cut saying %q", r.Complete, r.Problems, c.says)
			}
		})
	}
}

// TestClientClosedIsNotACrash: a message the SDK cannot read makes it
// close the session; the report says the client closed it, not that the
// server crashed or exited.
func TestClientClosedIsNotACrash(t *testing.T) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "flood", "invalid")
	opts.Probes = steps(t, `[{"tool": "invalid"}]`)
	res, err := runScan(t, cli, opts)
	r := res.Report
	if err == nil {
		t.Fatalf("the scan completed; problems %+v", r.Problems)
	}
	if len(problemsOf(r, "crash")) > 0 {
		t.Errorf("blamed on the server: %+v", r.Problems)
	}
	found := false
	for _, p := range problemsOf(r, "protocol") {
		found = found || strings.Contains(p.Message, "the client closed the session") && p.Call == 1
	}
	if !found {
		t.Errorf("problems %+v, want a protocol problem on call 1 saying the client closed the session", r.Problems)
	}
}
