package rules

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestSecretDisclosed: the calls of one tool that returned planted
// secrets make one warning on that tool, at its first such call, with
// each call and role as evidence; secrets in stderr make one on the
// server; a report without any makes none; the policy can turn it off.
func TestSecretDisclosed(t *testing.T) {
	r := report.New()
	r.Sandbox.Isolation = "session"
	r.Tools = []report.Tool{{Name: "show_env"}, {Name: "echo"}}
	r.Calls = []report.Call{
		{Seq: 1, Tool: "echo", Effects: report.NewEffects()},
		{Seq: 2, Tool: "show_env", Disclosed: []string{"<aws-secret-access-key>", "<github-token>"}, Effects: report.NewEffects()},
		{Seq: 3, Tool: "show_env", Disclosed: []string{"<github-token>"}, Effects: report.NewEffects()},
	}
	if f := Evaluate(&report.Report{Sandbox: r.Sandbox, Tools: r.Tools, Calls: r.Calls[:1]}, Options{}); len(f) != 0 {
		t.Fatalf("nothing disclosed: %+v", f)
	}
	r.Server.StderrDisclosed = []string{"<dotenv-password>"}
	f := Evaluate(r, Options{})
	if len(f) != 2 {
		t.Fatalf("findings %+v", f)
	}
	tool, server := f[0], f[1]
	if tool.Rule != SecretDisclosed || tool.Severity != report.SeverityWarning || tool.Tool != "show_env" || tool.Call != 2 ||
		!reflect.DeepEqual(tool.Evidence, []string{"<aws-secret-access-key> in the result of call 2", "<github-token> in the result of call 2", "<github-token> in the result of call 3"}) ||
		len(tool.EvidencePaths) != 3 || tool.Message != `"show_env" call 2 handed 3 planted secret(s) to the model in its result` {
		t.Errorf("tool finding %+v", tool)
	}
	if server.Rule != SecretDisclosed || server.Tool != "" || server.Call != 0 ||
		!reflect.DeepEqual(server.Evidence, []string{"<dotenv-password> in the server's stderr or instructions"}) || len(server.EvidencePaths) != 1 {
		t.Errorf("server finding %+v", server)
	}
	kept, ignored := Policy{Rules: map[string]Override{SecretDisclosed: {Off: true}}}.Apply(f)
	if len(kept) != 0 || len(ignored) != 2 {
		t.Errorf("off: kept %+v ignored %+v", kept, ignored)
	}
}
