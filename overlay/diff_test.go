package overlay

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	for _, c := range []struct{ name, old, cur, want string }{
		{"equal", "a\n", "a\n", ""},
		{"created", "", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"deleted", "x\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"},
		{"no newline", "a\nb", "a\nc", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
	} {
		if got := UnifiedDiff("a", "b", []byte(c.old), []byte(c.cur)); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, got, c.want)
		}
	}
}

// TestMyersScripts: the edit script rebuilds both sides, and is never
// longer than replacing every line; past the bound it is that.
func TestMyersScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a'+r.IntN(4))) + "\n"
		}
		return out
	}
	for i := 0; i < 200; i++ {
		a, b := gen(r.IntN(30)), gen(r.IntN(30))
		ops := myers(a, b)
		var ra, rb []string
		edits := 0
		for _, o := range ops {
			if o.kind != '+' {
				ra = append(ra, o.line)
			}
			if o.kind != '-' {
				rb = append(rb, o.line)
			}
			if o.kind != ' ' {
				edits++
			}
		}
		if strings.Join(ra, "") != strings.Join(a, "") || strings.Join(rb, "") != strings.Join(b, "") || edits > len(a)+len(b) {
			t.Fatalf("script for %q -> %q does not rebuild them: %+v", a, b, ops)
		}
	}
	big := func(p string) []string {
		out := make([]string, maxDiffEdits)
		for i := range out {
			out[i] = p + string(rune(i)) + "\n"
		}
		return out
	}
	ops := myers(big("a"), big("b"))
	if len(ops) != 2*maxDiffEdits || ops[0].kind != '-' || ops[len(ops)-1].kind != '+' {
		t.Errorf("over the bound: %d ops", len(ops))
	}
}
