//go:build linux

package overlay

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/continuity/fs/fstest"
	"golang.org/x/sys/unix"
)

// trustStat makes the hash cache believe path's current stat goes with its
// old hash: what a write through a dirty shared mapping leaves (no stat
// field changes), made without depending on when the kernel writes back.
func trustStat(t *testing.T, u *UpperDir, rel string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(u.Upper, rel), &st); err != nil {
		t.Fatal(err)
	}
	h := u.hashes[rel]
	h.ino, h.size, h.mtime, h.ctime = int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()
	u.hashes[rel] = h
}

func snapWith(t *testing.T, u *UpperDir, opts SnapshotOptions) Snapshot {
	t.Helper()
	s, err := u.SnapshotWith(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerifyComparesContentNotStat: a file rewritten with its stat
// unchanged is missed by the cache, and caught when it is to be verified,
// under every name it has.
func TestVerifyComparesContentNotStat(t *testing.T) {
	lo, up := layers(t, lowerImage)
	apply(t, up,
		fstest.CreateDir("/workspace", 0o755),
		fstest.CreateFile("/workspace/data.json", []byte(`{"a":1}`), 0o644),
		fstest.CreateDir("/tmp", 0o1777),
		fstest.CreateFile("/tmp/held", []byte("aaaa"), 0o644),
		fstest.Link("/tmp/held", "/tmp/alias"),
	)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	snap(t, u)
	// rewrite changes a file's bytes and leaves the snapshot that follows
	// with its new stat and its old hash: the state a write through a
	// dirty mapping leaves, whose stat does not change at all.
	rewrite := func(rel, content string) Snapshot {
		if err := os.WriteFile(filepath.Join(up, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		trustStat(t, u, rel)
		trustStat(t, u, "/tmp/alias")
		return snap(t, u)
	}
	prev := rewrite("/tmp/held", "bbbb")
	cur := snap(t, u)
	wantChanges(t, Delta(prev, cur)) // the stat cache is fooled
	prev = cur

	cur = snapWith(t, u, SnapshotOptions{Verify: map[string]bool{"/tmp/held": true}})
	wantChanges(t, Delta(prev, cur), "modified file outside/tmp /tmp/alias", "modified file outside/tmp /tmp/held")
	prev = cur

	prev = rewrite("/tmp/held", "cccc")
	trustStat(t, u, "/workspace/data.json")
	cur = snapWith(t, u, SnapshotOptions{VerifyAll: true})
	wantChanges(t, Delta(prev, cur), "modified file outside/tmp /tmp/alias", "modified file outside/tmp /tmp/held")
	if len(cur.Unhashed) != 0 {
		t.Errorf("unhashed %q within the default budget", cur.Unhashed)
	}
}

// TestVerifyCatchesAWriteThroughASharedMapping writes through a mapping
// of an upper file the way a hostile server does; whatever the kernel did
// with the times, verifying finds the new bytes.
func TestVerifyCatchesAWriteThroughASharedMapping(t *testing.T) {
	lo, up := layers(t, lowerImage)
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/mapped", []byte("0123456789"), 0o644))
	f, err := os.OpenFile(filepath.Join(up, "tmp/mapped"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	m[0] = 'x' // dirty: later writes fault no more
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	prev := snap(t, u)
	m[1] = 'y'
	cur := snapWith(t, u, SnapshotOptions{Verify: map[string]bool{"/tmp/mapped": true}})
	wantChanges(t, Delta(prev, cur), "modified file outside/tmp /tmp/mapped")
}

// TestHashBudget: files the budget does not cover are listed and not
// hashed, never taken as unchanged, and the next snapshot with room
// reports no change that did not happen.
func TestHashBudget(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{HashBudget: 10}}
	prev := snap(t, u)
	apply(t, up,
		fstest.CreateDir("/tmp", 0o1777),
		fstest.CreateFile("/tmp/a", []byte("12345678"), 0o644), // fits
		fstest.CreateFile("/tmp/b", []byte("12345678"), 0o644), // does not
		fstest.CreateFile("/tmp/c", []byte("12"), 0o644),       // fits what is left
	)
	cur := snap(t, u)
	if want := []string{"/tmp/b"}; !reflect.DeepEqual(cur.Unhashed, want) {
		t.Fatalf("unhashed %q, want %q", cur.Unhashed, want)
	}
	if e := cur.Entries["/tmp/b"]; !e.Unhashed || e.SHA256 != "" {
		t.Errorf("/tmp/b: %+v", e)
	}
	d := Delta(prev, cur)
	wantChanges(t, d, "created file outside/tmp /tmp/a", "created file outside/tmp /tmp/b", "created file outside/tmp /tmp/c")
	prev = cur
	u.Limits.HashBudget = 0 // the default: room for all
	cur = snap(t, u)
	wantChanges(t, Delta(prev, cur))
	if len(cur.Unhashed) != 0 || cur.Entries["/tmp/b"].SHA256 == "" {
		t.Errorf("with room: unhashed %q, /tmp/b %+v", cur.Unhashed, cur.Entries["/tmp/b"])
	}
	// A shared budget runs out across snapshots of the same moment, and a
	// deadline in the past covers nothing.
	b := NewBudget(1<<20, time.Now().Add(-time.Second))
	cur = snapWith(t, u, SnapshotOptions{VerifyAll: true, Budget: b})
	if want := []string{"/tmp/a", "/tmp/b", "/tmp/c"}; !reflect.DeepEqual(cur.Unhashed, want) || b.Spent() != 0 {
		t.Errorf("past the deadline: unhashed %q, spent %d", cur.Unhashed, b.Spent())
	}
}

// TestVerifyFilesOverTheSizeBound: a held file too large for a reported
// hash is still compared by content (its digest is never reported), out
// of the budget.
func TestVerifyFilesOverTheSizeBound(t *testing.T) {
	lo, up := layers(t, lowerImage)
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/big", []byte("aaaaaaaa"), 0o644))
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxHashBytes: 4}}
	held := SnapshotOptions{Verify: map[string]bool{"/tmp/big": true}}
	prev := snapWith(t, u, held)
	if e := prev.Entries["/tmp/big"]; e.SHA256 != "" || e.Digest == "" {
		t.Fatalf("held big file: %+v", e)
	}
	if err := os.WriteFile(filepath.Join(up, "tmp/big"), []byte("bbbbbbbb"), 0o644); err != nil {
		t.Fatal(err)
	}
	trustStat(t, u, "/tmp/big")
	prev = snap(t, u) // the new stat, the old digest
	cur := snap(t, u)
	wantChanges(t, Delta(prev, cur))
	cur = snapWith(t, u, held)
	d := Delta(prev, cur)
	wantChanges(t, d, "modified file outside/tmp /tmp/big")
	if len(d) == 1 && d[0].SHA256 != "" {
		t.Errorf("a digest over the size bound is reported: %+v", d[0])
	}
	held.Budget = NewBudget(7, time.Time{})
	if cur = snapWith(t, u, held); !reflect.DeepEqual(cur.Unhashed, []string{"/tmp/big"}) {
		t.Errorf("over the budget: unhashed %q", cur.Unhashed)
	}
}

// TestVerifyFileDeeperThanPathMax: a file whose path is longer than the
// kernel takes in one call (PATH_MAX, 4096) is hashed all the same, and
// a change to it through a shared mapping, which moves no stat field, is
// found.
func TestVerifyFileDeeperThanPathMax(t *testing.T) {
	lo, up := layers(t, lowerImage)
	apply(t, up, fstest.CreateDir("/tmp", 0o1777))
	// 30 levels of 200-byte names: about 6 KB of path.
	dir, err := os.Open(filepath.Join(up, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	rel := "/tmp"
	for range 30 {
		if err := unix.Mkdirat(int(dir.Fd()), name, 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir.Close()
		dir = os.NewFile(uintptr(fd), name)
		rel += "/" + name
	}
	fd, err := unix.Openat(int(dir.Fd()), "deep", unix.O_RDWR|unix.O_CREAT, 0o644)
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "deep")
	defer f.Close()
	if _, err := f.Write([]byte("xxxxxxxx")); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(fd, 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	m[0] = 'x' // the page is dirty: the next write moves no time
	rel += "/deep"
	if len(rel) <= unix.PathMax {
		t.Fatalf("path of %d bytes, want more than %d", len(rel), unix.PathMax)
	}
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	prev := snapWith(t, u, SnapshotOptions{Verify: map[string]bool{rel: true}})
	if e := prev.Entries[rel]; e.SHA256 == "" && !e.Unhashed {
		t.Fatalf("%d-byte path neither hashed nor counted unhashed: %+v", len(rel), e)
	}
	m[1] = 'y'
	cur := snapWith(t, u, SnapshotOptions{Verify: map[string]bool{rel: true}})
	var got []string
	for _, c := range Delta(prev, cur) {
		if c.Path == rel {
			got = append(got, c.Change.String())
		}
	}
	if len(got) != 1 || got[0] != "modified" {
		t.Fatalf("change to the deep file: %q, want modified", got)
	}
}
