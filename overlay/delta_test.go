//go:build linux

package overlay

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/continuity/fs/fstest"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// whiteout is how overlayfs marks a deleted lower path in the upper dir.
func whiteout(name string) fstest.Applier {
	return fstest.CreateDeviceFile(name, os.ModeDevice|os.ModeCharDevice, 0, 0)
}

// opaque marks an upper directory as hiding its lower contents.
func opaque(name string) fstest.Applier {
	return fstest.SetXAttr(name, "trusted.overlay.opaque", "y")
}

// layers makes a lower dir and an upper dir from fixtures.
func layers(t *testing.T, lower fstest.Applier) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("whiteouts (mknod) and trusted xattrs need root")
	}
	lo, up := t.TempDir(), t.TempDir()
	if err := lower.Apply(lo); err != nil {
		t.Fatal(err)
	}
	return lo, up
}

func apply(t *testing.T, dir string, a ...fstest.Applier) {
	t.Helper()
	if err := fstest.Apply(a...).Apply(dir); err != nil {
		t.Fatal(err)
	}
}

// stepper returns a function that applies changes to a fresh upper dir
// over lowerImage and returns the delta since the previous step: one
// phase of a run each.
func stepper(t *testing.T) func(a ...fstest.Applier) []Change {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	prev := snap(t, u)
	return func(a ...fstest.Applier) []Change {
		apply(t, up, a...)
		cur := snap(t, u)
		d := Delta(prev, cur)
		prev = cur
		return d
	}
}

func snap(t *testing.T, u *UpperDir) Snapshot {
	t.Helper()
	s, err := u.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// brief renders changes as "change type scope/area path" lines.
func brief(cs []Change) []string {
	out := []string{}
	for _, c := range cs {
		where := c.Scope
		if c.Area != "" {
			where += "/" + c.Area
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", c.Change, c.Type, where, c.Path))
	}
	return out
}

func wantChanges(t *testing.T, got []Change, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if g := brief(got); !reflect.DeepEqual(g, want) {
		t.Errorf("changes:\n got %q\nwant %q", g, want)
	}
}

var lowerImage = fstest.Apply(
	fstest.CreateDir("/workspace", 0o755),
	fstest.CreateFile("/workspace/seed.txt", []byte("seed\n"), 0o644),
	fstest.CreateFile("/workspace/data.json", []byte(`{"a":1}`), 0o644),
	fstest.CreateDir("/workspace/src", 0o755),
	fstest.CreateFile("/workspace/src/main.js", []byte("x"), 0o644),
	fstest.CreateDir("/etc", 0o755),
	fstest.CreateFile("/etc/passwd", []byte("root:x:0:0\n"), 0o644),
	fstest.CreateDir("/tmp", 0o1777),
	fstest.CreateDir("/home/sandbox", 0o755),
)

func TestClassifiesEveryKindOfChange(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	apply(t, up,
		// created in and outside the workspace
		fstest.CreateDir("/workspace", 0o755), // copied up for its children only
		fstest.CreateDir("/workspace/tests", 0o755),
		fstest.CreateFile("/workspace/tests/probe.spec.ts", []byte("test"), 0o644),
		fstest.CreateDir("/tmp", 0o1777),
		fstest.CreateFile("/tmp/cache.json", []byte("{}"), 0o600),
		fstest.CreateDir("/home", 0o755),
		fstest.CreateDir("/home/sandbox", 0o755),
		fstest.CreateFile("/home/sandbox/.rc", []byte("x"), 0o644),
		// modified: copied up with new content
		fstest.CreateFile("/workspace/data.json", []byte(`{"a":2}`), 0o644),
		// deleted: whiteouts over lower files
		whiteout("/workspace/seed.txt"),
		fstest.CreateDir("/etc", 0o700), // mode changed: reported
		whiteout("/etc/passwd"),
		fstest.Symlink("/etc/shadow", "/workspace/evil"),
	)
	got := Delta(before, snap(t, u))
	wantChanges(t, got,
		"modified dir outside/system /etc",
		"deleted file outside/system /etc/passwd",
		"created file outside/home /home/sandbox/.rc",
		"created file outside/tmp /tmp/cache.json",
		"modified file workspace /workspace/data.json",
		"created symlink workspace /workspace/evil",
		"deleted file workspace /workspace/seed.txt",
		"created dir workspace /workspace/tests",
		"created file workspace /workspace/tests/probe.spec.ts",
	)
	for _, c := range got {
		switch c.Path {
		case "/workspace/data.json":
			if c.SHA256 == "" || c.SHA256Before == "" || c.SHA256 == c.SHA256Before {
				t.Errorf("data.json hashes: after %q before %q", c.SHA256, c.SHA256Before)
			}
		case "/workspace/seed.txt":
			if c.SHA256Before == "" {
				t.Errorf("deleted seed.txt lacks its hash before")
			}
		case "/workspace/evil":
			if c.Link != "/etc/shadow" || c.SHA256 != "" {
				t.Errorf("symlink = %+v", c)
			}
		}
	}
}

func TestAttributesEachWriteToItsPhase(t *testing.T) {
	step := stepper(t)
	wantChanges(t, step(fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/x", []byte("one"), 0o644)),
		"created file outside/tmp /tmp/x")
	wantChanges(t, step(fstest.CreateFile("/tmp/x", []byte("two"), 0o644)),
		"modified file outside/tmp /tmp/x")
	// same bytes, new mtime: still a write
	wantChanges(t, step(fstest.Chtimes("/tmp/x", time.Unix(1, 0), time.Unix(1, 0))),
		"modified file outside/tmp /tmp/x")
	wantChanges(t, step()) // nothing happened
	wantChanges(t, step(fstest.Remove("/tmp/x")),
		"deleted file outside/tmp /tmp/x")
	// a lower file modified once, then again
	wantChanges(t, step(fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/seed.txt", []byte("v2"), 0o644)),
		"modified file workspace /workspace/seed.txt")
	wantChanges(t, step(fstest.CreateFile("/workspace/seed.txt", []byte("v3"), 0o644)),
		"modified file workspace /workspace/seed.txt")
	// deleted (copied-up file becomes a whiteout), then made again
	wantChanges(t, step(fstest.Remove("/workspace/seed.txt"), whiteout("/workspace/seed.txt")),
		"deleted file workspace /workspace/seed.txt")
	wantChanges(t, step(fstest.Remove("/workspace/seed.txt"), fstest.CreateFile("/workspace/seed.txt", []byte("v4"), 0o644)),
		"created file workspace /workspace/seed.txt")
	// a created directory removed with its contents: one entry
	step(fstest.CreateDir("/tmp/d", 0o755), fstest.CreateFile("/tmp/d/a", nil, 0o644), fstest.CreateFile("/tmp/d/b", nil, 0o644))
	wantChanges(t, step(fstest.RemoveAll("/tmp/d")), "deleted dir outside/tmp /tmp/d")
}

func TestOpaqueDirectoryReplacesLowerContents(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	// rm -rf /workspace/src && mkdir /workspace/src && touch main.js
	apply(t, up, fstest.CreateDir("/workspace", 0o755), fstest.CreateDir("/workspace/src", 0o755), opaque("/workspace/src"),
		fstest.CreateFile("/workspace/src/main.js", []byte("new"), 0o644))
	wantChanges(t, Delta(before, snap(t, u)),
		"deleted dir workspace /workspace/src",
		"created dir workspace /workspace/src",
		// the lower main.js is hidden: this one is new, not modified
		"created file workspace /workspace/src/main.js",
	)
}

// TestForgedUserOpaqueIsNotADeletion: the server may set user.* xattrs on
// its own directories; a user.overlay.opaque it sets hides nothing (the
// engine mounts overlayfs without userxattr), so it must not read as the
// deletion of what the image had below.
func TestForgedUserOpaqueIsNotADeletion(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	apply(t, up, fstest.CreateDir("/workspace", 0o755), fstest.CreateDir("/workspace/src", 0o755),
		fstest.SetXAttr("/workspace/src", "user.overlay.opaque", "y"))
	for _, c := range Delta(before, snap(t, u)) {
		if c.Change == report.ChangeDeleted {
			t.Errorf("a forged user.overlay.opaque reads as %s %s", c.Change, c.Path)
		}
	}
}

func TestWhiteoutsInLowerLayersAndLayerOrder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bottom, middle, up := t.TempDir(), t.TempDir(), t.TempDir()
	apply(t, bottom, fstest.CreateDir("/etc", 0o755), fstest.CreateFile("/etc/a", []byte("a"), 0o644), fstest.CreateFile("/etc/b", []byte("b"), 0o644))
	apply(t, middle, fstest.CreateDir("/etc", 0o755), whiteout("/etc/a"))
	u := &UpperDir{Upper: up, Lowers: []string{middle, bottom}}
	before := snap(t, u)
	apply(t, up, fstest.CreateDir("/etc", 0o755), fstest.CreateFile("/etc/a", []byte("new"), 0o644), fstest.CreateFile("/etc/b", []byte("changed"), 0o644))
	wantChanges(t, Delta(before, snap(t, u)),
		"created file outside/system /etc/a", // deleted in a lower layer: new here
		"modified file outside/system /etc/b",
	)
}

func TestNeverFollowsLinksOutOfTheLayers(t *testing.T) {
	lo, up := layers(t, fstest.Apply(
		fstest.CreateDir("/workspace", 0o755),
		// a host workspace may hold links; the lower layer keeps them as links
		fstest.Symlink(t.TempDir(), "/workspace/outdir"),
	))
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lo, "workspace", "outdir", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	apply(t, up,
		fstest.CreateDir("/workspace", 0o755),
		fstest.Symlink(secret, "/workspace/x"),
		fstest.Symlink(host, "/workspace/hostdir"),
	)
	got := Delta(before, snap(t, u))
	wantChanges(t, got, "created symlink workspace /workspace/hostdir", "created symlink workspace /workspace/x")
	for _, c := range got {
		if c.SHA256 != "" || c.SHA256Before != "" {
			t.Errorf("%s was hashed through a link: %+v", c.Path, c)
		}
	}
	// Direct probes of the resolver: a path through a link never opens.
	if _, _, err := hashBeneath(up, "workspace/x", 1<<20, -1); err == nil {
		t.Error("hashBeneath followed a symlink to a host file")
	}
	if _, _, err := hashBeneath(up, "workspace/hostdir/secret", 1<<20, -1); err == nil {
		t.Error("hashBeneath followed a symlinked directory out of the layer")
	}
	if e := lookupLayers([]string{lo}, "/workspace/outdir/f", Limits{}.withDefaults(), maphash.MakeSeed()); e != nil {
		t.Errorf("lower lookup went through a symlinked directory: %+v", e)
	}
}

func TestOddNamesAreEscapedNotDropped(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	names := []string{"/tmp/new\nline", "/tmp/bad\xffutf8", "/tmp/tab\there", "/tmp/ok-ünïcode"}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777))
	for _, n := range names {
		apply(t, up, fstest.CreateFile(n, []byte("x"), 0o644))
	}
	got := Delta(before, snap(t, u))
	want := map[string]bool{`/tmp/new\nline`: true, `/tmp/bad\xffutf8`: true, `/tmp/tab\there`: true, "/tmp/ok-ünïcode": false}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d: %q", len(got), len(want), brief(got))
	}
	for _, c := range got {
		esc, ok := want[c.Path]
		if !ok || esc != c.PathEscaped {
			t.Errorf("path %q escaped=%v not expected", c.Path, c.PathEscaped)
		}
	}
}

func TestBoundsOnFloodsAndHugeFiles(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxEntries: 20, MaxHashBytes: 1 << 10}}
	apply(t, up, fstest.CreateDir("/tmp", 0o1777), fstest.CreateRandomFile("/tmp/huge", 1, 4<<10, 0o644))
	s := snap(t, u)
	if e := s.Entries["/tmp/huge"]; e.Size != 4<<10 || e.SHA256 != "" {
		t.Errorf("huge file: size %d hash %q; want the size and no hash over the bound", e.Size, e.SHA256)
	}
	for i := 0; i < 100; i++ {
		apply(t, up, fstest.CreateFile(fmt.Sprintf("/tmp/f%03d", i), nil, 0o644))
	}
	s = snap(t, u)
	if !s.Truncated || len(s.Entries) > 20 || s.Count != 21 {
		t.Errorf("flood: truncated %v, %d entries kept, count %d", s.Truncated, len(s.Entries), s.Count)
	}
}

func TestScopeAndArea(t *testing.T) {
	for p, want := range map[string]string{
		"/workspace": "workspace", "/workspace/a": "workspace", "/workspaces/a": "outside/other",
		"/tmp/x": "outside/tmp", "/var/tmp/x": "outside/tmp", "/root/.npm": "outside/home",
		"/home/sandbox/.cache": "outside/home", "/etc/hosts": "outside/system", "/usr/lib/x": "outside/system",
		"/lib64/x": "outside/system", "/srv/x": "outside/other", "/var/lib/x": "outside/system",
		"/dev/shm/x": "outside/shm", "/dev/shm": "outside/shm", "/dev/shmx": "outside/other", "/dev/mqueue/q": "outside/ipc",
		"/proc/sysvipc/shm/0": "outside/ipc", "/dev/x": "outside/other",
	} {
		got := Scope(p)
		if a := Area(p); a != "" {
			got += "/" + a
		}
		if got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
	if s, esc := EscapePath("/plain/path with spaces"); esc || s != "/plain/path with spaces" {
		t.Errorf("plain path escaped: %q", s)
	}
	if !strings.Contains(fmt.Sprint(EscapePath("/a\x00b")), `\x00`) {
		t.Error("NUL not escaped")
	}
}

func TestAppendIsToldFromOverwrite(t *testing.T) {
	step := stepper(t)
	appendTo := func(name, data string) fstest.Applier {
		return applyFunc(func(root string) error {
			f, err := os.OpenFile(filepath.Join(root, name), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(data)
			return err
		})
	}
	step(fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/log", []byte("one\n"), 0o644))
	if d := step(appendTo("/tmp/log", "two\n")); len(d) != 1 || !d[0].Appended {
		t.Errorf("append: %+v", d)
	}
	if d := step(fstest.CreateFile("/tmp/log", []byte("ONE\ntwo\nthree\n"), 0o644)); len(d) != 1 || d[0].Appended {
		t.Errorf("overwrite: %+v", d)
	}
	// A file of the image, copied up and appended to.
	if d := step(fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/seed.txt", []byte("seed\nmore\n"), 0o644)); len(d) != 1 || !d[0].Appended {
		t.Errorf("append to an image file: %+v", d)
	}
}

type applyFunc func(string) error

func (f applyFunc) Apply(root string) error { return f(root) }

func TestReplacedByAnotherTypeIsDeletedThenCreated(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	before := snap(t, u)
	apply(t, up, fstest.CreateDir("/workspace", 0o755), fstest.Symlink("/etc/shadow", "/workspace/seed.txt"))
	wantChanges(t, Delta(before, snap(t, u)),
		"deleted file workspace /workspace/seed.txt",
		"created symlink workspace /workspace/seed.txt")
}

// TestWalkNeverListsThroughASwappedDirectory: a directory replaced by a
// link to a host directory while the walk runs is not descended.
func TestWalkNeverListsThroughASwappedDirectory(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(host, "host-secret"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(root, "a"), nil, 0o644)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	os.WriteFile(filepath.Join(root, "b", "inside"), nil, 0o644)
	var seen []string
	err := walkBeneath(root, func(n node) error {
		seen = append(seen, n.rel)
		if n.rel == "/a" { // after b was listed, before it is opened
			os.Rename(filepath.Join(root, "b"), filepath.Join(root, "b.old"))
			os.Symlink(host, filepath.Join(root, "b"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		if strings.Contains(s, "host-secret") {
			t.Fatalf("the walk went through the link: %q", seen)
		}
	}
}

// TestAFloodCannotHideTheWorkspaceOrHome: when a flood elsewhere hits the
// entry bound, the workspace and the home directories were walked first:
// their changes are in the (truncated) snapshot; nothing is met twice.
func TestAFloodCannotHideTheWorkspaceOrHome(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxEntries: 30}}
	apply(t, up, fstest.CreateDir("/aaa", 0o755), fstest.CreateDir("/home/sandbox/.ssh", 0o700),
		fstest.CreateFile("/home/sandbox/.ssh/authorized_keys", []byte("k"), 0o600),
		fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/evil.txt", []byte("x"), 0o644), fstest.CreateDir("/root", 0o700),
		fstest.CreateFile("/root/.bashrc", []byte("x"), 0o644))
	for i := 0; i < 100; i++ {
		apply(t, up, fstest.CreateFile(fmt.Sprintf("/aaa/f%03d", i), nil, 0o644))
	}
	s := snap(t, u)
	if !s.Truncated {
		t.Fatal("not truncated")
	}
	for _, p := range []string{"/workspace/evil.txt", "/home/sandbox/.ssh/authorized_keys", "/root/.bashrc"} {
		if _, ok := s.Entries[p]; !ok {
			t.Errorf("%s hidden by the flood", p)
		}
	}
	// Unbounded, every entry is met once: the count is the entries.
	u = &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxEntries: 1000}}
	s = snap(t, u)
	if s.Truncated || s.Count != len(s.Entries) {
		t.Errorf("truncated %v, count %d, entries %d", s.Truncated, s.Count, len(s.Entries))
	}
}

// TestDeletionsInAWalkedSubtreeSurviveTruncation: in a truncated snapshot
// a path missing below a subtree walked whole is gone (deleted), while one
// past the bound is not.
func TestDeletionsInAWalkedSubtreeSurviveTruncation(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: Limits{MaxEntries: 30}}
	apply(t, up, fstest.CreateDir("/workspace", 0o755), fstest.CreateFile("/workspace/.env", []byte("x"), 0o644), fstest.CreateDir("/zzz", 0o755))
	for i := 0; i < 100; i++ {
		apply(t, up, fstest.CreateFile(fmt.Sprintf("/zzz/f%03d", i), nil, 0o644))
	}
	prev := snap(t, u)
	apply(t, up, fstest.RemoveAll("/workspace/.env"))
	cur := snap(t, u)
	if !cur.Truncated {
		t.Fatal("not truncated")
	}
	var got []string
	for _, c := range Delta(prev, cur) {
		got = append(got, c.Change.String()+" "+c.Path)
	}
	if !reflect.DeepEqual(got, []string{"deleted /workspace/.env"}) {
		t.Errorf("delta %q", got)
	}
}

// renameOver writes name whole to a temporary file and renames it over the
// old one, as an atomic store does.
func renameOver(name, data string) fstest.Applier {
	return applyFunc(func(root string) error {
		tmp := filepath.Join(root, name+".tmp")
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(root, name))
	})
}

// TestRewriteKeepingEveryLineIsToldFromOverwrite: a text file rewritten
// whole (renamed over) that keeps every old line in order, new lines
// anywhere, is LinesKept; one that drops or reorders a line, a binary
// file, and a file past the line bounds are not.
func TestRewriteKeepingEveryLineIsToldFromOverwrite(t *testing.T) {
	step := stepper(t)
	kept := func(d []Change) bool {
		t.Helper()
		if len(d) != 1 || d[0].Change != report.ChangeModified {
			t.Fatalf("changes %+v, want one modification", d)
		}
		return d[0].LinesKept
	}
	step(fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/store.jsonl", []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644))
	if d := step(renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":1}\n{\"id\":2}\n")); !kept(d) || d[0].Appended {
		t.Errorf("newest first: %+v", d)
	}
	if d := step(renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":1}\n{\"id\":4}\n{\"id\":2}\r\n{\"id\":5}")); !kept(d) {
		t.Errorf("inserted between, CRLF, no final newline: %+v", d)
	}
	if d := step(renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":2}\n{\"id\":1}\n{\"id\":4}\n{\"id\":5}\n")); kept(d) {
		t.Errorf("reordered: %+v", d)
	}
	if d := step(renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":1}\n{\"id\":4}\n")); kept(d) {
		t.Errorf("a line dropped: %+v", d)
	}
	if d := step(renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":1}\n{\"id\":4}\n\x00\n")); kept(d) {
		t.Errorf("binary: %+v", d)
	}
	// A file of the image: its lines are read from the lower layer.
	if d := step(fstest.CreateDir("/workspace", 0o755), renameOver("/workspace/seed.txt", "first\nseed\nlast\n")); !kept(d) {
		t.Errorf("an image file: %+v", d)
	}

	// Past the line bound, or the lines kept in all: not kept, judged as
	// any rewrite.
	for name, lim := range map[string]Limits{"line bound": {LineBound: 8}, "lines in all": {MaxLines: 1}} {
		lo, up := layers(t, lowerImage)
		u := &UpperDir{Upper: up, Lowers: []string{lo}, Limits: lim}
		apply(t, up, fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/store.jsonl", []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644))
		prev := snap(t, u)
		apply(t, up, renameOver("/tmp/store.jsonl", "{\"id\":3}\n{\"id\":1}\n{\"id\":2}\n"))
		if d := Delta(prev, snap(t, u)); kept(d) {
			t.Errorf("%s: %+v", name, d)
		}
	}
}

func TestKeepsLines(t *testing.T) {
	seed := maphash.MakeSeed()
	l := func(s string) *lineSet { return lineHashes(seed, []byte(s)) }
	for _, tc := range []struct {
		old, cur string
		want     bool
	}{
		{"", "a\n", true},
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "x\na\ny\nb\nz\n", true},
		{"a\nb\n", "b\na\n", false},
		{"a\na\n", "a\n", false},
		{"a\n", "\xff\na\n", false},
	} {
		if got := keepsLines(l(tc.old), l(tc.cur)); got != tc.want {
			t.Errorf("keepsLines(%q, %q) = %v, want %v", tc.old, tc.cur, got, tc.want)
		}
	}
}

// A file of the image copied up by a call that changed nothing (desktop
// commander chmods its ripgrep binary 0755, the mode it has, before each
// search) is no change; a chmod to the same mode later, which moves only
// the ctime, is none either; a new mode or new bytes are.
func TestCopyUpThatChangesNothingIsNoChange(t *testing.T) {
	lo, up := layers(t, lowerImage)
	u := &UpperDir{Upper: up, Lowers: []string{lo}}
	prev := snap(t, u)
	step := func(a ...fstest.Applier) []Change {
		t.Helper()
		apply(t, up, a...)
		cur := snap(t, u)
		d := Delta(prev, cur)
		prev = cur
		return d
	}
	const name = "/workspace/src/main.js"
	copyUp := applyFunc(func(root string) error {
		st, err := os.Stat(filepath.Join(lo, name))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(lo, name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(root, "/workspace/src"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, name), b, st.Mode().Perm()); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(root, name), st.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(filepath.Join(root, name), st.ModTime(), st.ModTime())
	})
	chmod := func(m os.FileMode) fstest.Applier {
		return applyFunc(func(root string) error { return os.Chmod(filepath.Join(root, name), m) })
	}
	wantChanges(t, step(copyUp))
	wantChanges(t, step(chmod(0o644)))
	wantChanges(t, step(chmod(0o755)), "modified file workspace "+name)
	wantChanges(t, step(fstest.CreateFile(name, []byte("y"), 0o755)), "modified file workspace "+name)
}
