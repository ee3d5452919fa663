package corpus

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader("# comment\n\n@scope/pkg@1.2.3 dist/index.js /workspace env:A=b +scripts # why\nplain@0.1.0 cli.js\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{
		{Package: "@scope/pkg", Version: "1.2.3", Entry: "dist/index.js", Args: []string{"/workspace"}, Env: []string{"A=b"}, Scripts: true, Why: "why"},
		{Package: "plain", Version: "0.1.0", Entry: "cli.js"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v", got)
	}
	if got[0].Slug() != "scope__pkg@1.2.3" || got[0].Spec() != "@scope/pkg@1.2.3" {
		t.Errorf("slug %q spec %q", got[0].Slug(), got[0].Spec())
	}
	for _, bad := range []string{"@scope/pkg dist/index.js", "pkg@1.0.0", "pkg@ x.js", "pkg@1 x.js env:=v"} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v", bad, err)
		}
	}
}

// TestTheCorpusFileParses: the committed list is well formed, pins every
// version, and has at least 12 servers.
func TestTheCorpusFileParses(t *testing.T) {
	f, err := os.Open("servers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	list, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 12 {
		t.Errorf("%d servers", len(list))
	}
	for _, s := range list {
		if strings.ContainsAny(s.Version, "^~*x ") || s.Version == "latest" {
			t.Errorf("%s: version %q is not pinned", s.Package, s.Version)
		}
	}
}

func TestScanArgs(t *testing.T) {
	s := Server{Package: "@a/b", Version: "1.0.0", Entry: "dist/index.js", Args: []string{"/workspace"}, Env: []string{"K=V"}}
	got := strings.Join(ScanArgs(s, "/cache/a__b@1.0.0", "/r/x.json", []string{"-v"}), " ")
	want := "scan --format json --out /r/x.json --fail-on never --package /cache/a__b@1.0.0:/package --env K=V -v -- node /package/node_modules/@a/b/dist/index.js /workspace"
	if got != want {
		t.Errorf("ScanArgs =\n%s\nwant\n%s", got, want)
	}
}

// TestSummarize: a call fails with isError or with no result; a tool is
// exercised by one call that did not.
func TestSummarize(t *testing.T) {
	r := report.Report{
		Complete: true,
		Tools:    []report.Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Calls: []report.Call{{Tool: "a"}, {Tool: "a", IsError: true}, {Tool: "b", IsError: true},
			{Tool: "c", Error: "timeout"}},
		Findings: []report.Finding{{Rule: "x"}},
	}
	row := Summarize(Server{Package: "p"}, r)
	if row.Tools != 3 || row.Calls != 4 || row.CallsFailed != 3 || row.Exercised != 1 || row.Findings != 1 || !row.Complete {
		t.Errorf("row %+v", row)
	}
	var b strings.Builder
	WriteTable(&b, []Row{row, {Server: Server{Package: "q", Version: "2"}, Err: "npm failed"}})
	for _, want := range []string{"| p |  | 3 | 4 | 3 | 1 (33%) | 1 | 0 |", "| q (npm failed) | 2 |", "| **total** (2 servers) | | 3 | 4 | 3 | 1 (33%) | 1 | 0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
