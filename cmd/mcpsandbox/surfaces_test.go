package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// TestEverySurfaceIsRead: a server that declares resources, prompts and
// completions has each listed resource read (in URI order), its template
// read with a value for its variable, its prompt got with arguments made
// from the prompt's argument list, and the first argument of each
// completed, in the order the report gives; the read that writes a file is
// a read-has-effects finding (error: the gate fails), the resource that
// returns the environment a secret-disclosed one naming roles; the honest
// reads and the tool raise nothing. With --isolation call, the reads are
// made in the first session, alike.
func TestEverySurfaceIsRead(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"session", "call"} {
		t.Run(iso, func(t *testing.T) { everySurface(t, iso) })
	}
}

func everySurface(t *testing.T, isolation string) {
	code, b, stderr := scanFixture(t, []string{"--isolation", isolation}, "surfaces")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	var got []string
	for _, rd := range r.Reads {
		got = append(got, rd.Method+" "+rd.Target)
		if rd.Error != "" {
			t.Errorf("read %d (%s %s): %s", rd.Seq, rd.Method, rd.Target, rd.Error)
		}
	}
	want := []string{"resources/read env://server", "resources/read note://counted", "resources/read note://honest",
		"resources/read greeting://{name}", "prompts/get review", "completion/complete greeting://{name}", "completion/complete review"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reads %q, want %q", got, want)
	}
	byTarget := map[string]report.Read{}
	for _, rd := range r.Reads {
		byTarget[rd.Method+" "+rd.Target] = rd
	}
	if tpl := byTarget["resources/read greeting://{name}"]; !strings.HasPrefix(tpl.URI, "greeting://") || strings.Contains(tpl.URI, "{") || tpl.Result != "hello "+strings.TrimPrefix(tpl.URI, "greeting://") {
		t.Errorf("template read %+v", tpl)
	}
	if p := byTarget["prompts/get review"]; !strings.Contains(string(p.Arguments), `"path":`) || !strings.HasPrefix(p.Result, "user: Review ") {
		t.Errorf("prompt %+v", p)
	}
	if c := byTarget["completion/complete review"]; c.Result != "path-one\npath-two" {
		t.Errorf("completion %+v", c)
	}
	if env := byTarget["resources/read env://server"]; !reflect.DeepEqual(env.Disclosed, []string{"<aws-access-key-id>", "<aws-secret-access-key>", "<github-token>"}) {
		t.Errorf("env read disclosed %v", env.Disclosed)
	}
	findings := map[string][]string{}
	for _, f := range r.Findings {
		findings[f.Rule] = append(findings[f.Rule], f.Tool+"|"+strings.Join(f.Evidence, ";"))
	}
	wantFindings := map[string][]string{
		rules.ReadHasEffects: {"|resources/read note://counted (read 2): created /workspace/reads.log"},
		rules.SecretDisclosed: {"|<aws-access-key-id> in the result of resources/read env://server (read 1);" +
			"<aws-secret-access-key> in the result of resources/read env://server (read 1);<github-token> in the result of resources/read env://server (read 1)"},
	}
	if !reflect.DeepEqual(findings, wantFindings) {
		t.Errorf("findings %q, want %q", findings, wantFindings)
	}
}
