//go:build linux

package overlay

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// mountOverlay mounts an overlay of lower (made by fill) on a new upper
// dir and returns the merged and upper dirs; it needs root (CI runs as
// root, and fails rather than skips there).
func mountOverlay(t testing.TB, fill func(lower string)) (merged, upper, lower string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mounting an overlay needs root")
		}
		t.Skip("mounting an overlay needs root")
	}
	dir := t.TempDir()
	lower, upper, work, merged := filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fill(lower)
	if err := unix.Mount("overlay", merged, "overlay", 0, "lowerdir="+lower+",upperdir="+upper+",workdir="+work); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no overlay mount here: %v", err)
		}
		t.Skipf("no overlay mount here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", merged, err)
		}
	})
	return merged, upper, lower
}

// TestUpdateTellsWhatAWalkTells runs steps on an overlay and checks, after
// each, that the journal's update gives the changes a walk's snapshot
// gives.
func TestUpdateTellsWhatAWalkTells(t *testing.T) {
	merged, upper, lower := mountOverlay(t, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "workspace/src/deep"), 0o755))
		must(t, os.WriteFile(filepath.Join(lower, "workspace/src/a.txt"), []byte("a\nb\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(lower, "workspace/src/deep/d.txt"), []byte("d"), 0o644))
		must(t, os.MkdirAll(filepath.Join(lower, "etc"), 0o755))
		must(t, os.WriteFile(filepath.Join(lower, "etc/conf"), []byte("x"), 0o644))
	})
	m := func(p string) string { return filepath.Join(merged, p) }
	steps := []struct {
		name string
		do   func()
	}{
		{"nothing", func() {}},
		{"append to a lower file (copy-up)", func() { appendTo(t, m("workspace/src/a.txt"), "c\n") }},
		{"a new file", func() { must(t, os.WriteFile(m("workspace/new.txt"), []byte("n"), 0o600)) }},
		{"a write in a copied-up directory", func() { appendTo(t, m("workspace/src/deep/d.txt"), "e") }},
		{"chmod", func() { must(t, os.Chmod(m("workspace/new.txt"), 0o644)) }},
		{"rename a file", func() { must(t, os.Rename(m("workspace/new.txt"), m("workspace/moved.txt"))) }},
		{"a new tree at once", func() {
			must(t, os.MkdirAll(m("tmp/t/u/v"), 0o755))
			must(t, os.WriteFile(m("tmp/t/u/v/w"), []byte("w"), 0o644))
			must(t, os.WriteFile(m("tmp/t/x"), []byte("x"), 0o644))
		}},
		{"a file in the new tree", func() { must(t, os.WriteFile(m("tmp/t/u/y"), []byte("y"), 0o644)) }},
		{"rename a directory", func() { must(t, os.Rename(m("tmp/t"), m("tmp/t2"))) }},
		{"write below the renamed directory", func() { appendTo(t, m("tmp/t2/u/v/w"), "more") }},
		{"remove a tree", func() { must(t, os.RemoveAll(m("tmp/t2"))) }},
		{"remove a lower file (whiteout)", func() { must(t, os.Remove(m("etc/conf"))) }},
		{"remove a lower directory and make it again (opaque)", func() {
			must(t, os.RemoveAll(m("workspace/src/deep")))
			must(t, os.Mkdir(m("workspace/src/deep"), 0o755))
			must(t, os.WriteFile(m("workspace/src/deep/again"), []byte("g"), 0o644))
		}},
		{"a hard link written through its other name", func() {
			must(t, os.WriteFile(m("workspace/h1"), []byte("h"), 0o644))
			must(t, os.Link(m("workspace/h1"), m("tmp/h2")))
		}},
		{"write through the link", func() { appendTo(t, m("tmp/h2"), "!") }},
		{"a symlink replaced by a file", func() {
			must(t, os.Symlink("/etc/passwd", m("workspace/ln")))
		}},
		{"then the file", func() {
			must(t, os.Remove(m("workspace/ln")))
			must(t, os.WriteFile(m("workspace/ln"), []byte("f"), 0o644))
		}},
		{"a write through a shared mapping, its descriptor closed first", func() {
			f, err := os.OpenFile(m("workspace/src/deep/again"), os.O_RDWR, 0)
			must(t, err)
			b, err := unix.Mmap(int(f.Fd()), 0, 1, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			must(t, err)
			must(t, f.Close())
			b[0] = 'M'
			must(t, unix.Munmap(b))
		}},
		{"truncate", func() { must(t, os.Truncate(m("workspace/src/a.txt"), 1)) }},
		{"mtime put back", func() {
			st, err := os.Stat(m("workspace/moved.txt"))
			must(t, err)
			must(t, os.WriteFile(m("workspace/moved.txt"), []byte("N"), 0o644))
			must(t, os.Chtimes(m("workspace/moved.txt"), st.ModTime(), st.ModTime()))
		}},
	}
	ctx := context.Background()
	walked := &UpperDir{Upper: upper, Lowers: []string{lower}}
	j, err := OpenJournal(0)
	must(t, err)
	t.Cleanup(func() { j.Close() })
	journaled := &UpperDir{Upper: upper, Lowers: []string{lower}, Journal: j}
	prevWalk, err := walked.Snapshot(ctx)
	must(t, err)
	if _, err := journaled.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, s := range steps {
		s.do()
		curWalk, err := walked.Snapshot(ctx)
		must(t, err)
		want := Delta(prevWalk, curWalk)
		prevWalk = curWalk
		p, c, ok, err := journaled.Update(ctx, SnapshotOptions{})
		must(t, err)
		if !ok {
			t.Fatalf("%s: the journal could not tell (%s)", s.name, j.Broken())
		}
		got := Delta(p, c)
		changes += len(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", s.name, got, want)
		}
	}
	if changes < len(steps) {
		t.Fatalf("only %d changes in %d steps: the steps did not run", changes, len(steps))
	}
}

// TestJournalGivesUpPastItsBound: more directories than it may watch
// and the journal is given up, each snapshot a walk.
func TestJournalGivesUpPastItsBound(t *testing.T) {
	merged, upper, lower := mountOverlay(t, func(string) {})
	j, err := OpenJournal(3)
	must(t, err)
	t.Cleanup(func() { j.Close() })
	u := &UpperDir{Upper: upper, Lowers: []string{lower}, Journal: j}
	ctx := context.Background()
	if _, err := u.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, os.MkdirAll(filepath.Join(merged, "a/b/c/d/e"), 0o755))
	// The update that meets the bound still reads the whole tree.
	p, c, ok, err := u.Update(ctx, SnapshotOptions{})
	must(t, err)
	if ok && len(Delta(p, c)) != 5 {
		t.Fatalf("the update that met the bound: %+v", Delta(p, c))
	}
	if j.Broken() == "" {
		t.Fatal("the journal is not given up")
	}
	must(t, os.WriteFile(filepath.Join(merged, "a/b/c/d/e/f"), nil, 0o644))
	if _, _, ok, _ := u.Update(ctx, SnapshotOptions{}); ok {
		t.Fatal("a journal given up still updates")
	}
	snap, err := u.Snapshot(ctx)
	must(t, err)
	if _, ok := snap.Entries["/a/b/c/d/e/f"]; !ok {
		t.Fatalf("the walk after does not see the file: %v", snap.Entries)
	}
}

func appendTo(t testing.TB, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(s)
	must(t, err)
	must(t, f.Close())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
