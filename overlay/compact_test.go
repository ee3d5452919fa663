//go:build linux

package overlay

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/containerd/continuity/fs/fstest"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// deltaBefore is Delta as it was before DeltaEach, word for word: every
// change built, then sorted. The tests below hold DeltaEach to it.
func deltaBefore(prev, cur Snapshot) []Change {
	var out []Change
	for p, e := range cur.Entries {
		o, had := prev.Entries[p]
		if had && same(o, e) {
			continue
		}
		if !had && !prev.Reached(p) {
			continue
		}
		if e.Opaque && (!had || !o.Opaque) {
			out = append(out, change(p, report.ChangeDeleted, e.Before, e), change(p, report.ChangeCreated, &e, e))
			continue
		}
		if e.Kind != Removed && ((had && o.Kind != Removed && o.Type != e.Type) || (!had && e.Before != nil && e.Before.Type != e.Type)) {
			old := o
			if !had {
				old = *e.Before
			}
			out = append(out, change(p, report.ChangeDeleted, &old, old), change(p, report.ChangeCreated, &e, e))
			continue
		}
		var c report.ChangeKind
		switch {
		case e.Kind == Removed:
			c = report.ChangeDeleted
		case had && o.Kind == Removed, !had && e.Kind == Added:
			c = report.ChangeCreated
		case e.Type == Dir && !had && e.Before != nil && !metaDiffers(*e.Before, e):
			continue
		case !had && unchangedCopy(e):
			continue
		default:
			c = report.ChangeModified
		}
		ch := change(p, c, &e, e)
		if c == report.ChangeModified && e.Type == File && e.PrefixSHA256 != "" {
			switch {
			case had && o.Type == File:
				ch.Appended = o.SHA256 != "" && e.PrefixSHA256 == o.SHA256
			case !had && e.Before != nil:
				ch.Appended = e.Before.SHA256 != "" && e.PrefixSHA256 == e.Before.SHA256
			}
		}
		if c == report.ChangeModified && e.Type == File && !ch.Appended {
			switch {
			case had && o.Type == File:
				ch.LinesKept = keepsLines(o.lines, e.lines)
				ch.ContentKept = !ch.LinesKept && keepsContent(o.lines, e.lines)
			case !had && e.Before != nil:
				ch.LinesKept = keepsLines(e.Before.lines, e.lines)
				ch.ContentKept = !ch.LinesKept && keepsContent(e.Before.lines, e.lines)
			}
		}
		out = append(out, ch)
	}
	for p, o := range prev.Entries {
		if !cur.Reached(p) {
			continue
		}
		if _, ok := cur.Entries[p]; ok || o.Kind == Removed {
			continue
		}
		if _, ok := prev.Entries[path.Dir(p)]; ok {
			if _, still := cur.Entries[path.Dir(p)]; !still {
				continue
			}
		}
		out = append(out, change(p, report.ChangeDeleted, &o, o))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Change == report.ChangeDeleted
	})
	return out
}

// flood makes n empty files in dir.
func flood(dir string, n int) fstest.Applier {
	a := []fstest.Applier{fstest.CreateDir(dir, 0o755)}
	for i := range n {
		a = append(a, fstest.CreateFile(fmt.Sprintf("%s/%06d", dir, i), nil, 0o644))
	}
	return fstest.Apply(a...)
}

// compactSteps are phases of a run, each a fixture applied to the upper
// dir over lowerImage, that touch what the compact snapshot shares: empty
// files (one hash, one line set), new directories (no lower lookup below
// them), floods past the bound, odd names, and every kind of change.
var compactSteps = []struct {
	name string
	a    fstest.Applier
}{
	{"empty files in a new directory", fstest.Apply(fstest.CreateDir("/tmp", 0o1777), flood("/tmp/f", 40))},
	{"every kind", fstest.Apply(
		fstest.CreateDir("/workspace", 0o755),
		fstest.CreateFile("/workspace/new.txt", []byte("new\n"), 0o644),
		fstest.CreateFile("/workspace/seed.txt", []byte("seed\nmore\n"), 0o644),
		whiteout("/workspace/data.json"),
		fstest.CreateDir("/workspace/src", 0o755), opaque("/workspace/src"),
		fstest.CreateDir("/etc", 0o755), fstest.Chmod("/etc", 0o755),
		fstest.CreateFile("/etc/passwd", []byte("root:x:0:0\n"), 0o600),
		fstest.Symlink("/etc/passwd", "/tmp/link"),
		fstest.CreateFile("/tmp/bad\xffname", []byte("x"), 0o644),
		fstest.CreateFile("/tmp/new\nline", nil, 0o644),
	)},
	{"empty files rewritten and removed", fstest.Apply(
		fstest.CreateFile("/tmp/f/000001", []byte("now text\n"), 0o644),
		fstest.Chmod("/tmp/f/000002", 0o600),
		fstest.RemoveAll("/tmp/f/000003"),
		fstest.CreateFile("/workspace/new.txt", nil, 0o644),
		fstest.CreateFile("/workspace/seed.txt", []byte("seed\nmore\nand more\n"), 0o644),
	)},
	{"a deep new tree", fstest.Apply(fstest.CreateDir("/tmp/d", 0o755), fstest.CreateDir("/tmp/d/e", 0o755), flood("/tmp/d/e/f", 10),
		fstest.CreateDir("/home/sandbox/.cache", 0o755), flood("/home/sandbox/.cache/x", 5))},
	{"a type replaced, a directory removed", fstest.Apply(
		fstest.RemoveAll("/tmp/link"), fstest.CreateDir("/tmp/link", 0o755),
		fstest.RemoveAll("/tmp/d"),
		fstest.RemoveAll("/workspace/seed.txt"), fstest.Symlink("x", "/workspace/seed.txt"),
	)},
	{"a flood past the bound", flood("/zzz", 300)},
	{"deletions under the flood and in the workspace", fstest.Apply(
		fstest.RemoveAll("/zzz/000010"), fstest.RemoveAll("/zzz/000290"), fstest.RemoveAll("/workspace/new.txt"))},
	{"the flood gone", fstest.RemoveAll("/zzz")},
}

// TestDeltaEachIsDeltaAsBefore: step by step, the changes DeltaEach gives
// are those Delta gave before it, in the same order; the snapshots'
// image states (Before) are what a lookup without the cache finds.
func TestDeltaEachIsDeltaAsBefore(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxEntries: 200}}
	prev := snap(t, u)
	for _, st := range compactSteps {
		t.Run(st.name, func(t *testing.T) {
			apply(t, up, st.a)
			cur := snap(t, u)
			want := deltaBefore(prev, cur)
			if len(want) == 0 {
				t.Fatal("the step changed nothing: it tests nothing")
			}
			if got := Delta(prev, cur); !reflect.DeepEqual(got, want) {
				t.Errorf("changes:\n got %q\nwant %q", brief(got), brief(want))
			}
			// Stopped early, DeltaEach has given the first changes.
			var some []Change
			DeltaEach(prev, cur, func(c Change) bool {
				some = append(some, c)
				return len(some) < 2
			})
			if n := min(2, len(want)); !reflect.DeepEqual(some, want[:n]) {
				t.Errorf("stopped after %d: %q, want %q", n, brief(some), brief(want[:n]))
			}
			lim := u.Limits.withDefaults()
			for p, e := range cur.Entries {
				if e.Kind == Removed || underAny(p, opaqueDirs(cur)) {
					continue
				}
				b := lookupLayers(u.Lowers, p, lim, u.seed)
				if (b == nil) != (e.Before == nil) || (b != nil && (b.Type != e.Before.Type || b.Size != e.Before.Size || b.SHA256 != e.Before.SHA256)) {
					t.Errorf("%q: before %+v, a lookup finds %+v", p, e.Before, b)
				}
			}
			prev = cur
		})
	}
}

func opaqueDirs(s Snapshot) []string {
	var out []string
	for p, e := range s.Entries {
		if e.Opaque {
			out = append(out, p)
		}
	}
	return out
}

// TestEmptyFilesShareTheirHashAndLines: a flood of empty files costs no
// hash string nor line set each; their hashes are the sha256 of nothing.
func TestEmptyFilesShareTheirHashAndLines(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), flood("/tmp/f", 20))
	s := snap(t, u)
	for i := range 20 {
		e := s.Entries[fmt.Sprintf("/tmp/f/%06d", i)]
		if e.SHA256 != emptySum || e.lines != noLines || unsafeData(e.SHA256) != unsafeData(emptySum) {
			t.Fatalf("%06d: sha256 %q, lines %p; want the shared ones", i, e.SHA256, e.lines)
		}
	}
	// A second snapshot names each file with the same bytes as the first.
	keys := func(s Snapshot) map[string]*byte {
		m := map[string]*byte{}
		for p := range s.Entries {
			m[p] = unsafeData(p)
		}
		return m
	}
	first, second := keys(s), keys(snap(t, u))
	for i := range 20 {
		p := fmt.Sprintf("/tmp/f/%06d", i)
		if first[p] == nil || first[p] != second[p] {
			t.Fatalf("%s: a copy of its path a snapshot", p)
		}
	}
	// The new directory was looked up in the image, its files were not.
	if _, ok := u.lower["/tmp/f"]; !ok {
		t.Error("/tmp/f not looked up")
	}
	if _, ok := u.lower["/tmp/f/000000"]; ok {
		t.Error("a file below a directory the image lacks was looked up")
	}
}

// fakeClock makes now advance a millisecond at each reading, from start.
func fakeClock(t *testing.T, start time.Time) {
	var n atomic.Int64
	old := now
	now = func() time.Time { return start.Add(time.Duration(n.Add(1)) * time.Millisecond) }
	t.Cleanup(func() { now = old })
}

// TestAWalkPastItsDeadlineStops: the clock passes the deadline part way
// through a flood; the walk stops within a bounded number of entries
// after, truncated and saying why, and what it did not reach is neither
// deleted nor created.
func TestAWalkPastItsDeadlineStops(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), flood("/tmp/f", 1000),
		fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/evil.txt", []byte("x"), 0o644))
	full := snap(t, u)
	start := time.Unix(1e9, 0)
	fakeClock(t, start)
	// Each entry reads the clock at most twice (the hash budget, the
	// deadline): past 200 readings, the walk has met at most 200 + 64
	// entries more than it had when the deadline passed.
	const readings = 200
	late, err := u.SnapshotWith(context.Background(), SnapshotOptions{Budget: NewBudget(DefaultHashBudget, start.Add(readings*time.Millisecond)), VerifyAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if !late.Truncated || !late.PastDeadline || late.Count > readings+deadlineEvery || len(late.Entries) != late.Count {
		t.Fatalf("truncated %v, past the deadline %v, count %d, %d entries; want a walk stopped within %d entries",
			late.Truncated, late.PastDeadline, late.Count, len(late.Entries), readings+deadlineEvery)
	}
	if _, ok := late.Entries["/workspace/evil.txt"]; !ok {
		t.Error("the workspace, walked first, was not reached")
	}
	if d := Delta(full, late); len(d) != 0 {
		t.Errorf("a walk stopped at the deadline reports %q", brief(d))
	}
	if d := Delta(late, full); len(d) != 0 {
		t.Errorf("after a walk stopped at the deadline: %q", brief(d))
	}
}

// TestTreeWalkPastItsDeadlineStops is the same for a Tree.
func TestTreeWalkPastItsDeadlineStops(t *testing.T) {
	dir := t.TempDir()
	if err := flood("/f", 1000).Apply(dir); err != nil {
		t.Fatal(err)
	}
	tr := &Tree{Root: dir, At: ShmDir}
	full, err := tr.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1e9, 0)
	fakeClock(t, start)
	const readings = 100
	late, err := tr.SnapshotUntil(context.Background(), start.Add(readings*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !late.Truncated || !late.PastDeadline || late.Count > readings+deadlineEvery {
		t.Fatalf("truncated %v, past the deadline %v, count %d; want a walk stopped within %d entries", late.Truncated, late.PastDeadline, late.Count, readings+deadlineEvery)
	}
	if d := Delta(full, late); len(d) != 0 {
		t.Errorf("a walk stopped at the deadline reports %q", brief(d))
	}
}

// cancelAfter is a context whose Err is Canceled from its n-th call on.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestAWalkWhoseContextEndsStops: the context ends part way through a
// flood; the walk ends at the next entry, with the context's error.
func TestAWalkWhoseContextEndsStops(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), flood("/tmp/f", 1000))
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(500)
	s, err := u.Snapshot(ctx)
	if err != context.Canceled || s.Count > 500 {
		t.Fatalf("err %v after %d entries; want the context's error within 500", err, s.Count)
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }

// chain makes a chain of n directories named d below dir.
func chain(dir string, n int) fstest.Applier {
	var a []fstest.Applier
	for range n {
		dir += "/d"
		a = append(a, fstest.CreateDir(dir, 0o755))
	}
	return fstest.Apply(a...)
}

// TestADeepChainStopsAtThePathBound: a chain of directories costs its
// depth squared in path bytes; the walk stops once they pass the bound,
// as at the entry bound, and what it did not reach is neither deleted nor
// created. The workspace, walked first, is still seen.
func TestADeepChainStopsAtThePathBound(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxPathBytes: 20_000}}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), chain("/tmp", 200),
		fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/evil.txt", []byte("x"), 0o644))
	s := snap(t, u)
	if !s.Truncated || s.PastDeadline || s.Count >= 200 {
		t.Fatalf("truncated %v, past the deadline %v, count %d; want the walk stopped at the path bound", s.Truncated, s.PastDeadline, s.Count)
	}
	total := 0
	for p := range s.Entries {
		total += len(p)
	}
	if total > 20_000 {
		t.Errorf("%d bytes of paths kept, over the bound", total)
	}
	if _, ok := s.Entries["/workspace/evil.txt"]; !ok {
		t.Error("the workspace, walked first, was not reached")
	}
	whole := snap(t, &UpperDir{Upper: up, Lowers: []string{lo}})
	if d := Delta(whole, s); len(d) != 0 {
		t.Errorf("a walk stopped at the path bound reports %q", brief(d))
	}
	if d := Delta(s, whole); len(d) != 0 {
		t.Errorf("after a walk stopped at the path bound: %q", brief(d))
	}
}
