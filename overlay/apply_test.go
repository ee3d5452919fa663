//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/continuity/fs/fstest"
)

// hostTree is the host directory every apply test starts from.
var hostTree = fstest.Apply(
	fstest.CreateFile("a.txt", []byte("one\ntwo\nthree\n"), 0o644),
	fstest.CreateDir("sub", 0o755),
	fstest.CreateFile("sub/b.txt", []byte("bee\n"), 0o600),
	fstest.CreateFile("old.txt", []byte("gone\n"), 0o644),
	fstest.CreateDir("olddir", 0o755),
	fstest.CreateFile("olddir/x", []byte("x\n"), 0o644),
	fstest.CreateFile("bin.dat", []byte{0, 1, 2}, 0o644),
)

// Owners the test gives the host directory and one of its files, to see
// that apply writes as them, not as the sandbox user or root.
const (
	dirUID, dirGID   = 4100, 4101
	fileUID, fileGID = 4200, 4201
)

// workspaceFixture makes a host directory from hostTree, its baseline,
// and an upper dir with the run's changes.
func workspaceFixture(t *testing.T, upper ...fstest.Applier) ApplyOptions {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("whiteouts (mknod), trusted xattrs and chown need root")
	}
	host, up := t.TempDir(), t.TempDir()
	apply(t, host, hostTree, fstest.Chown(".", dirUID, dirGID), fstest.Chown("a.txt", fileUID, fileGID))
	b, err := TakeBaseline(host, BaselineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, up, upper...)
	return ApplyOptions{Host: host, Upper: up, Baseline: b}
}

// summary renders changes as "change type path [refusal]" lines.
func summary(cs []WorkspaceChange) []string {
	out := []string{}
	for _, c := range cs {
		s := fmt.Sprintf("%s %s %s", c.Change, c.Type, c.Path)
		if c.Refused != nil {
			s += " refused:" + c.Refused.Reason.String()
		}
		out = append(out, s)
	}
	return out
}

func readHost(t *testing.T, o ApplyOptions, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(o.Host, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// TestChangesApplyRoundTrip: a run's edits (a modified file, new files in
// a new directory, a deleted file, a deleted directory) are listed with
// diffs and written to the host as its owners.
func TestChangesApplyRoundTrip(t *testing.T) {
	o := workspaceFixture(t,
		fstest.CreateFile("a.txt", []byte("one\n2\nthree\nfour\n"), 0o644),
		fstest.CreateDir("sub", 0o755),
		fstest.CreateDir("sub/new", 0o750),
		fstest.CreateFile("sub/new/c.txt", []byte("sea\n"), 0o640),
		fstest.CreateFile("new.txt", []byte("fresh\n"), 0o600),
		whiteout("old.txt"),
		whiteout("olddir"),
		// Copied up and never changed: not a change.
		fstest.CreateFile("bin.dat", []byte{0, 1, 2}, 0o644),
	)
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modified file a.txt", "created file new.txt", "deleted file old.txt", "deleted dir olddir",
		"deleted file olddir/x", "created dir sub/new", "created file sub/new/c.txt"}
	if got := summary(cs); !slices.Equal(got, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantDiff := "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n"
	if cs[0].Diff != wantDiff {
		t.Errorf("diff of a.txt:\n%s\nwant:\n%s", cs[0].Diff, wantDiff)
	}
	if !strings.Contains(cs[1].Diff, "+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n") || !strings.Contains(cs[2].Diff, "-gone\n") {
		t.Errorf("diffs of new.txt and old.txt: %q %q", cs[1].Diff, cs[2].Diff)
	}
	res, err := Apply(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) > 0 || len(res.Applied) != len(want) {
		t.Fatalf("applied %v, refused %v", summary(res.Applied), res.Refused)
	}
	if got := readHost(t, o, "a.txt"); got != "one\n2\nthree\nfour\n" {
		t.Errorf("a.txt = %q", got)
	}
	if got := readHost(t, o, "sub/new/c.txt"); got != "sea\n" {
		t.Errorf("sub/new/c.txt = %q", got)
	}
	for _, gone := range []string{"old.txt", "olddir"} {
		if _, err := os.Lstat(filepath.Join(o.Host, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", gone, err)
		}
	}
	if u, g := owner(t, filepath.Join(o.Host, "a.txt")); u != fileUID || g != fileGID {
		t.Errorf("a.txt owned by %d:%d, want its owner %d:%d", u, g, fileUID, fileGID)
	}
	for _, p := range []string{"new.txt", "sub/new", "sub/new/c.txt"} {
		if u, g := owner(t, filepath.Join(o.Host, p)); u != dirUID || g != dirGID {
			t.Errorf("%s owned by %d:%d, want the directory's owner %d:%d", p, u, g, dirUID, dirGID)
		}
	}
	if fi, _ := os.Stat(filepath.Join(o.Host, "new.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("new.txt mode %v", fi.Mode())
	}
	// Nothing of ours is left beside the files.
	ents, _ := os.ReadDir(o.Host)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".mcpsandbox-apply-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// Applied, the run changes nothing more: what is left to apply is
	// refused as changed on the host (it is the run's copy now).
	again, err := Apply(context.Background(), o, "a.txt")
	if err != nil || len(again.Applied) != 0 || len(again.Refused) != 1 || again.Refused[0].Reason != RefuseHostChanged {
		t.Errorf("second apply: %+v, %v", again, err)
	}
}

// TestApplyPicksPaths: only the paths asked for (and the new directories
// above them) are written.
func TestApplyPicksPaths(t *testing.T) {
	o := workspaceFixture(t,
		fstest.CreateFile("a.txt", []byte("changed\n"), 0o644),
		fstest.CreateDir("sub", 0o755),
		fstest.CreateDir("sub/new", 0o755),
		fstest.CreateFile("sub/new/c.txt", []byte("sea\n"), 0o644),
	)
	res, err := Apply(context.Background(), o, "sub/new/c.txt", "nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(res.Applied); !slices.Equal(got, []string{"created dir sub/new", "created file sub/new/c.txt"}) {
		t.Errorf("applied %v", got)
	}
	if len(res.Refused) != 1 || res.Refused[0].Reason != RefuseUnknown {
		t.Errorf("refused %v, want nothing-here as not changed", res.Refused)
	}
	if got := readHost(t, o, "a.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("a.txt was written: %q", got)
	}
}

// refusedCase applies path from a fixture (after host edits made once
// the baseline is taken) and wants it refused for reason, the host left
// as it was.
func refusedCase(t *testing.T, upper []fstest.Applier, hostEdit fstest.Applier, planted []string, path string, reason Refusal) {
	t.Helper()
	o := workspaceFixture(t, upper...)
	o.Planted = planted
	if hostEdit != nil {
		apply(t, o.Host, hostEdit)
	}
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, c := range cs {
		if c.Path == path {
			listed = true
			if c.Refused == nil || c.Refused.Reason != reason {
				t.Errorf("changes: %s refused %v, want %v", path, c.Refused, reason)
			}
		}
	}
	if !listed && reason != RefuseEscapes {
		t.Errorf("changes do not list %s: %v", path, summary(cs))
	}
	before := treeOf(t, o.Host)
	res, err := Apply(context.Background(), o, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 {
		t.Errorf("applied %v", summary(res.Applied))
	}
	if len(res.Refused) == 0 || res.Refused[0].Reason != reason || !errors.Is(res.Refused[0], ErrRefused) {
		t.Errorf("refused %v, want %v", res.Refused, reason)
	}
	if after := treeOf(t, o.Host); !slices.Equal(before, after) {
		t.Errorf("host changed by a refused apply:\n%v\n%v", before, after)
	}
}

// treeOf lists a directory's paths, types and contents.
func treeOf(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		s := rel + " " + d.Type().String()
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			s += " " + string(b)
		}
		out = append(out, s)
		return nil
	})
	return out
}

func TestApplyRefusesHostModified(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", []byte("run\n"), 0o644)},
		fstest.CreateFile("a.txt", []byte("user\n"), 0o644), nil, "a.txt", RefuseHostChanged)
}

func TestApplyRefusesHostCreated(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("new.txt", []byte("run\n"), 0o644)},
		fstest.CreateFile("new.txt", []byte("user\n"), 0o644), nil, "new.txt", RefuseHostChanged)
}

func TestApplyRefusesHostDeleted(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", []byte("run\n"), 0o644)},
		fstest.Remove("a.txt"), nil, "a.txt", RefuseHostChanged)
}

// TestApplyRefusesDeletingHostAddition: a directory the run deleted
// that has a new file on the host is not removed.
func TestApplyRefusesDeletingHostAddition(t *testing.T) {
	refusedCase(t, []fstest.Applier{whiteout("olddir")},
		fstest.CreateFile("olddir/mine", []byte("user\n"), 0o644), nil, "olddir", RefuseHostChanged)
}

func TestApplyRefusesSymlink(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.Symlink("/etc/passwd", "link")}, nil, nil, "link", RefuseSymlink)
}

func TestApplyRefusesDevice(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateDeviceFile("null", os.ModeDevice|os.ModeCharDevice|0o666, 1, 3)}, nil, nil, "null", RefuseSpecial)
}

func TestApplyRefusesFifo(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateDeviceFile("pipe", os.ModeNamedPipe|0o644, 0, 0)}, nil, nil, "pipe", RefuseSpecial)
}

func TestApplyRefusesSocket(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateSocket("sock", 0o644)}, nil, nil, "sock", RefuseSpecial)
}

func TestApplyRefusesSetuid(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("tool", []byte("#!/bin/sh\n"), 0o755), fstest.Chmod("tool", 0o4755|os.ModeSetuid)},
		nil, nil, "tool", RefuseSetID)
}

func TestApplyRefusesSetgid(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", []byte("run\n"), 0o644), fstest.Chmod("a.txt", 0o644|os.ModeSetgid)},
		nil, nil, "a.txt", RefuseSetID)
}

func TestApplyRefusesDotDot(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", []byte("run\n"), 0o644)}, nil, nil, "../a.txt", RefuseEscapes)
}

func TestApplyRefusesAbsolute(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", []byte("run\n"), 0o644)}, nil, nil, "/a.txt", RefuseEscapes)
}

// TestApplyRefusesSymlinkedParent: a parent swapped for a link on the
// host after the run started is never followed.
func TestApplyRefusesSymlinkedParent(t *testing.T) {
	outside := t.TempDir()
	refusedCase(t, []fstest.Applier{fstest.CreateDir("sub", 0o755), fstest.CreateFile("sub/evil.txt", []byte("run\n"), 0o644)},
		fstest.Apply(fstest.RemoveAll("sub"), fstest.Symlink(outside, "sub")), nil, "sub/evil.txt", RefuseEscapes)
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the directory: %v", ents)
	}
}

func TestApplyRefusesPlanted(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateDir("proj", 0o755), fstest.CreateFile("proj/README.md", []byte("canary\n"), 0o644)},
		nil, []string{"proj/README.md"}, "proj/README.md", RefusePlanted)
}

// TestApplyRefusesUnderPlantedDir: a planted directory covers what is
// in it.
func TestApplyRefusesUnderPlantedDir(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateDir("proj", 0o755), fstest.CreateFile("proj/new.txt", []byte("x\n"), 0o644)},
		nil, []string{"/proj"}, "proj/new.txt", RefusePlanted)
}

// TestApplyRefusesMetacopy: a file whose data overlayfs left below is
// not applied (it would write an empty file).
func TestApplyRefusesMetacopy(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateFile("a.txt", nil, 0o600), fstest.SetXAttr("a.txt", "trusted.overlay.metacopy", "")},
		nil, nil, "a.txt", RefuseOverlay)
}

// TestOpaqueDirDeletes: an opaque directory (deleted and made again in
// the run) deletes what the host had in it that the run did not make
// again.
func TestOpaqueDirDeletes(t *testing.T) {
	o := workspaceFixture(t,
		fstest.CreateDir("olddir", 0o755), opaque("olddir"),
		fstest.CreateFile("olddir/y", []byte("why\n"), 0o644),
	)
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(cs), []string{"deleted file olddir/x", "created file olddir/y"}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if res, err := Apply(context.Background(), o); err != nil || len(res.Refused) > 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if got := treeOf(t, filepath.Join(o.Host, "olddir")); !slices.Equal(got, []string{". d---------", "y ---------- why\n"}) {
		t.Errorf("olddir: %q", got)
	}
}

// TestFileReplacesDir: a host directory the run replaced with a file is
// removed with what was in it, and the file written.
func TestFileReplacesDir(t *testing.T) {
	o := workspaceFixture(t, fstest.CreateFile("olddir", []byte("flat\n"), 0o644))
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(cs), []string{"modified file olddir", "deleted file olddir/x"}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if res, err := Apply(context.Background(), o); err != nil || len(res.Refused) > 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if got := readHost(t, o, "olddir"); got != "flat\n" {
		t.Errorf("olddir = %q", got)
	}
}

// TestChangesBinaryAndBound: a binary file is marked, not diffed; a text
// file over the bound says why it has no diff.
func TestChangesBinaryAndBound(t *testing.T) {
	o := workspaceFixture(t,
		fstest.CreateFile("bin.dat", []byte{0, 9, 9}, 0o644),
		fstest.CreateFile("big.txt", []byte(strings.Repeat("line\n", 100)), 0o644),
	)
	o.MaxDiffBytes = 64
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Path != "big.txt" || cs[0].DiffOmitted == "" || cs[0].Diff != "" || !cs[1].Binary || cs[1].Diff != "" {
		t.Errorf("changes %+v", cs)
	}
}
