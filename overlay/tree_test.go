//go:build linux

package overlay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeStepper returns the delta of a Tree over dir since its last call.
func treeStepper(t *testing.T, tr *Tree) func() []Change {
	t.Helper()
	prev := Snapshot{Entries: map[string]Entry{}} // a fresh tmpfs is empty
	return func() []Change {
		t.Helper()
		cur, err := tr.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := Delta(prev, cur)
		prev = cur
		return d
	}
}

func TestTreeReportsEachPhaseInItsArea(t *testing.T) {
	dir := t.TempDir()
	step := treeStepper(t, &Tree{Root: dir, At: ShmDir})
	wantChanges(t, step())
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o700)
	os.Symlink("/etc/shadow", filepath.Join(dir, "d", "l"))
	wantChanges(t, step(), "created dir outside/shm /dev/shm/d", "created symlink outside/shm /dev/shm/d/l", "created file outside/shm /dev/shm/x")
	wantChanges(t, step())
	os.Remove(filepath.Join(dir, "x"))
	os.WriteFile(filepath.Join(dir, "sem.lock"), nil, 0o600)
	wantChanges(t, step(), "created file outside/shm /dev/shm/sem.lock", "deleted file outside/shm /dev/shm/x")

	// Bounded like the upper dir: a flood stops the walk and says so.
	tr := &Tree{Root: dir, At: ShmDir, Limits: Limits{MaxEntries: 2}}
	s, err := tr.Snapshot(context.Background())
	if err != nil || !s.Truncated || len(s.Entries) != 2 {
		t.Errorf("bounded tree: truncated %v, %d entries, err %v; want truncated at 2", s.Truncated, len(s.Entries), err)
	}
	// It reached /d and /d/l (name order), not what sorts after.
	if !s.Reached(ShmDir+"/d/l") || s.Reached(ShmDir+"/sem.lock") {
		t.Errorf("entry-bounded tree reaches /d/l: %v, /sem.lock: %v", s.Reached(ShmDir+"/d/l"), s.Reached(ShmDir+"/sem.lock"))
	}
	// Sparse files cost nothing to make: what is hashed is bounded too.
	for _, n := range []string{"sparse1", "sparse2"} {
		f, err := os.Create(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(1 << 20)
		f.Close()
	}
	tr = &Tree{Root: dir, At: ShmDir, MaxHashTotal: 1<<20 + 1<<10}
	s, err = tr.Snapshot(context.Background())
	hashed := 0
	for _, n := range []string{"sparse1", "sparse2"} {
		if s.Entries[ShmDir+"/"+n].SHA256 != "" {
			hashed++
		}
	}
	if err != nil || !s.Truncated || hashed != 1 || len(s.Entries) != 4 {
		t.Errorf("hash budget: truncated %v, %d of 2 hashed, %d entries, err %v; want 1, the other left out, truncated", s.Truncated, hashed, len(s.Entries), err)
	}
	// What was left out is not reached: neither gone nor new.
	for _, n := range []string{"sparse1", "sparse2"} {
		if p := ShmDir + "/" + n; s.Reached(p) != (s.Entries[p].SHA256 != "") {
			t.Errorf("%s: reached %v, hashed %q", p, s.Reached(p), s.Entries[p].SHA256)
		}
	}
	if !s.Reached(ShmDir+"/d/l") || s.Reached("/tmp/x") {
		t.Error("a budget-truncated tree covers its walked paths, and nothing outside it")
	}
}

// A write through a shared mapping of a tmpfs file changes no time: the
// content is compared at every snapshot.
func TestTreeSeesWritesThroughASharedMapping(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "tree-test-")
	if err != nil {
		t.Skipf("no /dev/shm tmpfs here: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f, err := os.OpenFile(filepath.Join(dir, "buf"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	m[0] = 'a' // the page exists before the baseline
	step := treeStepper(t, &Tree{Root: dir, At: ShmDir})
	wantChanges(t, step(), "created file outside/shm /dev/shm/buf")
	var before unix.Stat_t
	unix.Fstat(int(f.Fd()), &before)
	copy(m, "secret")
	var after unix.Stat_t
	unix.Fstat(int(f.Fd()), &after)
	if before.Mtim != after.Mtim || before.Ctim != after.Ctim {
		t.Log("this kernel updates the times of a mapped tmpfs file: the test proves less")
	}
	wantChanges(t, step(), "modified file outside/shm /dev/shm/buf")
}

// TestTreeStopsHashingAtTheDeadline: past the run's deadline a Tree
// hashes nothing; its files are listed Unhashed (never taken as changed
// or unchanged by content), and a walk of fewer entries than a look at
// the deadline takes (deadlineEvery) is not cut short.
func TestTreeStopsHashingAtTheDeadline(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tr := &Tree{Root: dir, At: ShmDir}
	before, err := tr.Snapshot(context.Background())
	if err != nil || len(before.Unhashed) != 0 {
		t.Fatalf("no deadline: unhashed %q, err %v", before.Unhashed, err)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o600) // same size
	s, err := tr.SnapshotUntil(context.Background(), time.Now().Add(-time.Second))
	if err != nil || s.Truncated || len(s.Entries) != 2 {
		t.Fatalf("past the deadline: truncated %v, %d entries, err %v; want the whole walk", s.Truncated, len(s.Entries), err)
	}
	if want := []string{ShmDir + "/a", ShmDir + "/b"}; !slices.Equal(s.Unhashed, want) {
		t.Fatalf("unhashed %q, want %q", s.Unhashed, want)
	}
	for _, n := range []string{"a", "b"} {
		if e := s.Entries[ShmDir+"/"+n]; e.SHA256 != "" || !e.Unhashed {
			t.Errorf("%s: %+v, want unhashed", n, e)
		}
	}
}
