package overlay

import (
	"fmt"
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
		// A line is what ends in "\n", so a CRLF file's lines keep their "\r",
		// a changed line end is a changed line, and a final newline added or
		// taken away is said with patch's marker.
		{"crlf", "a\r\nb\r\n", "a\r\nc\r\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"},
		{"crlf to lf", "a\r\nb\r\n", "a\r\nb\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+b\n"},
		{"final newline added", "a\nb", "a\nb\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"final newline removed", "a\nb\n", "a\nb", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{"lone cr", "a\rb\n", "a\rc\n", "--- a\n+++ b\n@@ -1 +1 @@\n-a\rb\n+a\rc\n"},
	} {
		if got := UnifiedDiff("a", "b", []byte(c.old), []byte(c.cur)); got != c.want {
			t.Errorf("%s:\n%q\nwant:\n%q", c.name, got, c.want)
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

// TestUnifiedDiffRebuilds: applying the printed diff to the old text, as
// patch would, gives the new text, for random pairs that share lines (so
// hunks merge, split and touch the ends), with and without final
// newlines; and the hunks' headers count the lines they hold.
func TestUnifiedDiffRebuilds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() string {
		var s strings.Builder
		for j := r.IntN(40); j > 0; j-- {
			s.WriteString(string(rune('a' + r.IntN(5))))
			s.WriteByte('\n')
		}
		if r.IntN(3) == 0 {
			s.WriteString("end")
		}
		return s.String()
	}
	for i := 0; i < 2000; i++ {
		old, cur := gen(), gen()
		d := UnifiedDiff("a", "b", []byte(old), []byte(cur))
		got, err := applyUnified(old, d)
		if err != nil {
			t.Fatalf("%q -> %q: %v\n%s", old, cur, err, d)
		}
		if got != cur {
			t.Fatalf("%q -> %q: the diff rebuilds %q\n%s", old, cur, got, d)
		}
	}
}

// applyUnified applies a diff printed by UnifiedDiff to old, checking each
// hunk's header against the lines under it and each context line against
// old.
func applyUnified(old, diff string) (string, error) {
	if diff == "" {
		return old, nil
	}
	a := splitLines([]byte(old))
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) < 2 || lines[0] != "--- a\n" || lines[1] != "+++ b\n" {
		return "", fmt.Errorf("no header")
	}
	var out strings.Builder
	next := 0 // the next line of a not yet copied
	for i := 2; i < len(lines) && lines[i] != ""; {
		var aS, aN, bS, bN int
		if _, err := fmt.Sscanf(hunkHeader(lines[i]), "@@ -%d,%d +%d,%d @@", &aS, &aN, &bS, &bN); err != nil {
			return "", fmt.Errorf("hunk header %q: %w", lines[i], err)
		}
		i++
		start := aS - 1
		if aN == 0 {
			start = aS // an empty range names the line before
		}
		if start < next || start > len(a) {
			return "", fmt.Errorf("hunk at %d overlaps the one before or is past the end", aS)
		}
		for _, l := range a[next:start] {
			out.WriteString(l)
		}
		next = start
		gotA, gotB := 0, 0
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			body := l[1:]
			if i < len(lines) && lines[i] == "\\ No newline at end of file\n" {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if next >= len(a) || a[next] != body {
					return "", fmt.Errorf("line %d is not %q, which the diff says", next+1, body)
				}
				next++
				gotA++
				if l[0] == ' ' {
					out.WriteString(body)
					gotB++
				}
			case '+':
				out.WriteString(body)
				gotB++
			default:
				return "", fmt.Errorf("line %q", l)
			}
		}
		if gotA != aN || gotB != bN {
			return "", fmt.Errorf("hunk -%d,%d +%d,%d holds -%d +%d", aS, aN, bS, bN, gotA, gotB)
		}
	}
	for _, l := range a[next:] {
		out.WriteString(l)
	}
	return out.String(), nil
}

// hunkHeader writes a range of one line ("-3") in its long form ("-3,1").
func hunkHeader(h string) string {
	f := strings.Fields(h)
	for i, r := range f {
		if (strings.HasPrefix(r, "-") || strings.HasPrefix(r, "+")) && !strings.Contains(r, ",") {
			f[i] = r + ",1"
		}
	}
	return strings.Join(f, " ")
}

// BenchmarkUnifiedDiff: what one file's diff costs, from a small edit to
// the worst a server can make of a file under the diff bound (1 MiB each
// side, every line different: the search runs to maxDiffEdits, then every
// line is printed).
func BenchmarkUnifiedDiff(b *testing.B) {
	lines := func(n int, f func(i int) string) []byte {
		var s strings.Builder
		for i := range n {
			s.WriteString(f(i))
		}
		return []byte(s.String())
	}
	base := lines(3000, func(i int) string { return fmt.Sprintf("line %d\n", i) })
	edited := lines(3000, func(i int) string {
		if i%50 == 0 {
			return fmt.Sprintf("changed line %d\n", i)
		}
		return fmt.Sprintf("line %d\n", i)
	})
	for _, c := range []struct {
		name     string
		old, cur []byte
	}{
		{"3000lines/60changed", base, edited},
		{"1MiB/alldiffer", []byte(strings.Repeat("a\n", 1<<19)), []byte(strings.Repeat("b\n", 1<<19))},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				UnifiedDiff("a", "b", c.old, c.cur)
			}
		})
	}
}
