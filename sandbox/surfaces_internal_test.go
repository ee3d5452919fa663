package sandbox

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestExpandTemplate: RFC 6570 expressions get the values, escaped as
// their operator asks; every variable is found once, in order.
func TestExpandTemplate(t *testing.T) {
	vals := map[string]string{"path": "/a b/c", "q": "x&y", "n": "7"}
	for tpl, want := range map[string]string{
		"file://{path}":         "file://%2Fa%20b%2Fc",
		"file://{+path}":        "file:///a%20b/c",
		"doc{/n,q}":             "doc/7/x%26y",
		"search{?q,n}":          "search?q=x%26y&n=7",
		"search?x=1{&q}":        "search?x=1&q=x%26y",
		"v{.n}{;n}{#path}":      "v.7;n=7#/a%20b/c",
		"plain://no-vars":       "plain://no-vars",
		"trunc://{path:3}/{n*}": "trunc://%2Fa%20b%2Fc/7",
		"broken://{path":        "broken://{path",
	} {
		if got := expandTemplate(tpl, vals); got != want {
			t.Errorf("%s: %q, want %q", tpl, got, want)
		}
	}
	if got := templateVars("x://{a}/{+b,a}{?c:2,d*}"); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("vars %v", got)
	}
}

// TestSurfaceValues: a template's or prompt's variables get values as a
// tool's arguments of the same names would: a path points into the
// canary project.
func TestSurfaceValues(t *testing.T) {
	c := probes.NewBait(1).Canary
	got := synthStrings(c, "review", []string{"path", "name"}, map[string]string{"path": "file to review"})
	if got["path"] == "" || got["name"] == "" {
		t.Fatalf("values %v", got)
	}
	if p := got["path"]; len(p) < len(c.Dir) || p[:len(c.Dir)] != c.Dir {
		t.Errorf("path %q is not in the canary project %s", p, c.Dir)
	}
	if !reflect.DeepEqual(declaredSurfaces([]byte(`{"resources":{},"completions":{},"prompts":null}`)), surfaceCaps{resources: true, completions: true}) {
		t.Error("capabilities misread")
	}
}
