package overlay

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A small Myers diff, by lines, printed as a unified diff. Kept ours over
// github.com/aymanbagabas/go-udiff (x/tools' diff, published) for the
// bound, measured side by side (docs/architecture.md, "Line diffs"): its
// search gives up after a fixed 100 edits and replaces the whole region
// (60 lines changed in 3,000 print as 501 removed and 501 added; ours
// prints the 60), and on the worst file a server can make under the diff
// bound it takes twice our time and 2.5 times our memory.

// diffContext is how many unchanged lines surround a hunk.
const diffContext = 3

// maxDiffEdits bounds the Myers search (its work and memory grow with the
// square of the edits): past it the diff replaces every line, which is
// still a correct diff, only not the smallest.
const maxDiffEdits = 1000

// IsText says whether b is shown as text: valid UTF-8 with no NUL byte.
func IsText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// UnifiedDiff returns the unified diff of old into cur, by lines, with
// the file names given in the --- and +++ lines; "" when they are equal.
func UnifiedDiff(oldName, newName string, old, cur []byte) string {
	if bytes.Equal(old, cur) {
		return ""
	}
	a, b := splitLines(old), splitLines(cur)
	ops := myers(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// Group the edits into hunks: runs of edits closer than twice the
	// context are one hunk.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
				continue
			}
			if j-end > 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext+1, len(ops))
		writeHunk(&out, ops[start:stop])
		i = stop
	}
	return out.String()
}

// op is one line of the edit script: ' ' kept, '-' removed, '+' added,
// with its line numbers (1-based) in old and new.
type op struct {
	kind       byte
	line       string
	aLine, bLn int
}

func writeHunk(out *strings.Builder, ops []op) {
	aStart, bStart, aN, bN := 0, 0, 0, 0
	for _, o := range ops {
		if o.kind != '+' {
			if aN == 0 {
				aStart = o.aLine
			}
			aN++
		}
		if o.kind != '-' {
			if bN == 0 {
				bStart = o.bLn
			}
			bN++
		}
	}
	if aN == 0 {
		aStart = ops[0].aLine - 1 // an empty range names the line before
	}
	if bN == 0 {
		bStart = ops[0].bLn - 1
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
	for _, o := range ops {
		out.WriteByte(o.kind)
		out.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// splitLines splits b after each newline; the last line may have none.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// myers returns the edit script from a to b (Myers 1986, the greedy
// forward search with a saved trace), common prefix and suffix taken off
// first. Past maxDiffEdits it gives up on the smallest script.
func myers(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var mid []byte // the kinds of the middle's edit script
	if edits, ok := shortest(ma, mb); ok {
		mid = edits
	} else {
		mid = append(bytes.Repeat([]byte{'-'}, len(ma)), bytes.Repeat([]byte{'+'}, len(mb))...)
	}
	ops := make([]op, 0, len(a)+len(b))
	ai, bi := 0, 0
	emit := func(kind byte) {
		switch kind {
		case ' ':
			ops = append(ops, op{kind, a[ai], ai + 1, bi + 1})
			ai, bi = ai+1, bi+1
		case '-':
			ops = append(ops, op{kind, a[ai], ai + 1, bi + 1})
			ai++
		case '+':
			ops = append(ops, op{kind, b[bi], ai + 1, bi + 1})
			bi++
		}
	}
	for range pre {
		emit(' ')
	}
	for _, k := range mid {
		emit(k)
	}
	for range suf {
		emit(' ')
	}
	return ops
}

// shortest is Myers' search over a and b: the kinds of a shortest edit
// script, false past maxDiffEdits.
func shortest(a, b []string) ([]byte, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return append(bytes.Repeat([]byte{'-'}, n), bytes.Repeat([]byte{'+'}, m)...), true
	}
	maxD := min(n+m, maxDiffEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, off, n, m, d), true
			}
		}
	}
	return nil, false
}

// backtrack walks the saved trace back from (n, m) to (0, 0).
func backtrack(trace [][]int, off, n, m, d int) []byte {
	var rev []byte
	x, y := n, m
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			rev = append(rev, ' ')
			x, y = x-1, y-1
		}
		if x == px {
			rev = append(rev, '+')
		} else {
			rev = append(rev, '-')
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, ' ')
		x, y = x-1, y-1
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
