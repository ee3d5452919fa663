package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestClientUsage(t *testing.T) {
	dir := t.TempDir()
	chatOnly := filepath.Join(dir, "chat-only.json")
	os.WriteFile(chatOnly, []byte(`{"name":"chat-only","api":"openai","missing":"no-mcp-support","missingReason":"it has no MCP client"}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name":"bad","api":"openai","transports":["stdio"],"args":["--approval-mode","yolo"]}`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"client", "--help"}, 0, "--adapter"},
		{[]string{"client", "--adapter", "fixture"}, 2, "no client command"},
		{[]string{"client", "--", "c"}, 2, "--adapter: want a built-in"},
		{[]string{"client", "--adapter", "nope", "--", "c"}, 2, `no built-in adapter "nope"`},
		{[]string{"client", "--adapter", "fixture", "--transport", "sse", "--", "c"}, 2, `--transport "sse"`},
		{[]string{"client", "--adapter", "fixture", "--format", "sarif", "--", "c"}, 2, `--format "sarif"`},
		{[]string{"client", "--adapter", "gemini-cli", "--", "gemini", "--yolo"}, 2, "approves every call"},
		{[]string{"client", "--adapter", bad, "--", "c"}, 2, "approval mode yolo"},
		{[]string{"client", "--print-adapter", "gemini-cli"}, 0, `"trust": false`},
		{[]string{"client", "--print-adapter", "nope"}, 2, "built-ins are"},
		{[]string{"client", "--adapter", chatOnly, "--format", "text", "--", "chat"}, 3, "missing precondition: no-mcp-support"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		code := exitCode(err, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d (want %d), output %q lacks %q", tc.args, code, tc.code, out.String()+errb.String(), tc.want)
		}
	}
}

// The command end to end on the fixture client: the verdict's exit code,
// the text report, the JSON and the JUnit case.
func TestClientCommand(t *testing.T) {
	sandboxtest.Docker(t)
	dir := t.TempDir()
	fc := filepath.Join(dir, "fixtureclient")
	build := exec.Command("go", "build", "-o", fc, "./sandbox/internal/fixtureclient")
	build.Dir = sandboxtest.ModuleRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture client: %v\n%s", err, out)
	}
	js, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"client", "--adapter", "fixture", "--image", "mcpsandbox/base:latest", "--agent", sandboxtest.Agent(t),
		"--mount", fc + ":/opt/fixture/client", "--timeout", "30s", "--format", "text", "--json", js, "--junit", junit,
		"--", "/opt/fixture/client", "--policy", "readonly-auto"}, &out, &errb)
	if code := exitCode(err, &errb); code != 1 || !strings.HasPrefix(out.String(), "mcpsandbox client: CONFIRMED") {
		t.Fatalf("exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
	var rep clientreport.Report
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &rep); err != nil || rep.Schema != clientreport.Schema || rep.Verdict != clientreport.Confirmed || len(rep.Legs) != 2 {
		t.Errorf("JSON (%v): %.300s", err, b)
	}
	x, _ := os.ReadFile(junit)
	var suite struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(x, &suite); err != nil || suite.Failures != 1 {
		t.Errorf("JUnit (%v): %s", err, x)
	}
}
