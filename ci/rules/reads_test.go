package rules

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestReadHasEffects: a read that changed a file or left a process running
// is an error on the server naming the read; one that only ran a process
// to its end, or made a network attempt, is not; a planted secret it sent
// out is secret-exfiltration, one it returned secret-disclosed; the
// policy's path ignores drop its evidence by path.
func TestReadHasEffects(t *testing.T) {
	r := report.New()
	r.Sandbox.Isolation = "session"
	exit := 0
	quiet := report.NewEffects()
	quiet.Processes = []report.Process{{PID: 2, Argv: []string{"git", "show"}, ExitCode: &exit}}
	quiet.Network = []report.NetEvent{{Kind: "dns", Host: "example.com"}}
	writes := report.NewEffects()
	writes.Files = []report.FileChange{{Path: "/workspace/reads.log", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}}
	writes.Processes = []report.Process{{PID: 3, Argv: []string{"sleep", "60"}, Background: true}}
	leaks := report.NewEffects()
	leaks.Network = []report.NetEvent{{Kind: "dns", Host: "x.leak.example.com", Secrets: []string{"github-token"}}}
	r.Reads = []report.Read{
		{Seq: 1, Surface: report.SurfaceResource, Method: "resources/read", Target: "note://quiet", URI: "note://quiet", Effects: quiet},
		{Seq: 2, Surface: report.SurfaceTemplate, Method: "resources/read", Target: "log://{day}", URI: "log://today", Effects: writes},
		{Seq: 3, Surface: report.SurfacePrompt, Method: "prompts/get", Target: "env", Disclosed: []string{"<github-token>"}, Effects: leaks},
	}
	f := Evaluate(r, Options{})
	got := map[string][]string{}
	for _, x := range f {
		if x.Tool != "" || x.Call != 0 {
			t.Errorf("not a server-level finding: %+v", x)
		}
		got[x.Rule] = append(got[x.Rule], strings.Join(x.Evidence, ";"))
	}
	want := map[string][]string{
		ReadHasEffects:     {"resources/read log://{day} as log://today (read 2): created /workspace/reads.log;resources/read log://{day} as log://today (read 2): left running sleep 60"},
		SecretExfiltration: {"prompts/get env (read 3): github-token in dns query x.leak.example.com"},
		SecretDisclosed:    {"<github-token> in the result of prompts/get env (read 3)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("findings %q\nwant %q", got, want)
	}
	for _, x := range f {
		if x.Rule == ReadHasEffects && (x.Severity != report.SeverityError || !strings.HasPrefix(x.Message, "the server's resources/read log://{day} as log://today (read 2) changed 2 thing(s); ")) {
			t.Errorf("read-has-effects %+v", x)
		}
	}
	kept, _ := Policy{Ignore: Ignore{Paths: []string{"/workspace/reads.log"}}}.Apply(f)
	for _, x := range kept {
		if x.Rule == ReadHasEffects && (len(x.Evidence) != 1 || !strings.Contains(x.Message, "changed 1 thing(s)")) {
			t.Errorf("path ignored: %+v", x)
		}
	}
}

// TestSurfaceListTruncated: a resource or prompt list cut at a bound is an
// error on the server naming each list; none when nothing was cut.
func TestSurfaceListTruncated(t *testing.T) {
	r := report.New()
	if f := surfaceListCut(r); len(f) != 0 {
		t.Fatalf("nothing cut: %+v", f)
	}
	r.Server.SurfacesTruncated = []string{"resources/list", "prompts/list"}
	f := Evaluate(r, Options{})
	if len(f) != 1 || f[0].Rule != SurfaceListTruncated || f[0].Severity != report.SeverityError || f[0].Tool != "" ||
		!reflect.DeepEqual(f[0].Evidence, []string{"resources/list truncated", "prompts/list truncated"}) || len(f[0].EvidencePaths) != 2 {
		t.Errorf("findings %+v", f)
	}
}
