package corpus

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
)

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader("# comment\n\n@scope/pkg@1.2.3 dist/index.js /workspace env:A=b # why\nplain@0.1.0 cli.js\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{
		{Package: "@scope/pkg", Version: "1.2.3", Entry: "dist/index.js", Args: []string{"/workspace"}, Env: []string{"A=b"}, Why: "why"},
		{Package: "plain", Version: "0.1.0", Entry: "cli.js"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v", got)
	}
	if got[0].Spec() != "@scope/pkg@1.2.3" {
		t.Errorf("spec %q", got[0].Spec())
	}
	// +scripts ran npm install with scripts on the host: refused now.
	for _, bad := range []string{"@scope/pkg dist/index.js", "pkg@1.0.0", "pkg@ x.js", "pkg@1 x.js env:=v", "pkg@1 x.js +scripts"} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v", bad, err)
		}
	}
}

// TestTheCorpusFileParses: the committed list is well formed, pins every
// version, has at least 12 servers, and is a bulk list whose every spec
// runs the file its line names.
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
	var b strings.Builder
	if err := WriteList(&b, list); err != nil {
		t.Fatal(err)
	}
	specs, bad := bulk.ParseList("l", strings.NewReader(b.String()))
	if len(bad) > 0 || len(specs) != len(list) {
		t.Fatalf("bulk reads %d specs of %d, %v", len(specs), len(list), bad)
	}
	for i, s := range specs {
		if s.Bin != "./"+list[i].Entry || s.Version != list[i].Version {
			t.Errorf("%s: bin %q version %q", list[i].Package, s.Bin, s.Version)
		}
	}
}

// TestListLines: each server becomes the bulk spec that runs the same
// file with the same arguments and environment, and bulk reads it back
// as that.
func TestListLines(t *testing.T) {
	s := Server{Package: "@a/b", Version: "1.0.0", Entry: "dist/index.js", Args: []string{"/workspace", "x"}, Env: []string{"K=V", "L=a=b"}}
	line := s.ListLine()
	if want := "npm:@a/b@1.0.0 bin:./dist/index.js env:K=V env:L=a=b -- /workspace x"; line != want {
		t.Errorf("ListLine =\n%s\nwant\n%s", line, want)
	}
	specs, bad := bulk.ParseList("l", strings.NewReader(line))
	if len(bad) > 0 || len(specs) != 1 {
		t.Fatalf("bulk reads %q as %v, %v", line, specs, bad)
	}
	got := specs[0]
	if got.Kind != bulk.KindNPM || got.Name != "@a/b" || got.Version != "1.0.0" || got.Bin != "./dist/index.js" ||
		!reflect.DeepEqual(got.Args, []string{"/workspace", "x"}) ||
		!reflect.DeepEqual(got.Env, []bulk.EnvVar{{Name: "K", Value: "V"}, {Name: "L", Value: "a=b"}}) {
		t.Errorf("bulk reads %q as %+v", line, got)
	}
	o := Options{Binary: "mcpsandbox", Cache: "/c", Results: "/r", Jobs: 2, Flags: []string{"--no-boundary"}}
	if got, want := strings.Join(BulkArgs(o, "/r/l.txt"), " "), "bulk -j 2 --results /r --timeout 10m --cache /c --force --no-boundary /r/l.txt"; got != want {
		t.Errorf("BulkArgs = %s, want %s", got, want)
	}
	o.Resume, o.Image = true, "mcpsandbox/node:x"
	if got, want := strings.Join(BulkArgs(o, "l"), " "), "bulk -j 2 --results /r --timeout 10m --cache /c --image mcpsandbox/node:x --no-boundary l"; got != want {
		t.Errorf("BulkArgs = %s, want %s", got, want)
	}
}
