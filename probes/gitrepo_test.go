package probes

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// plant writes b's seeds under root as the runner does (/workspace and
// /home/sandbox below root), with their times, and returns the project's
// directory.
func plant(t *testing.T, b Bait, root string) string {
	t.Helper()
	for _, s := range b.Seeds() {
		p := filepath.Join(root, s.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s.Content), os.FileMode(s.Mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, s.ModTime, s.ModTime); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, b.Canary.Dir)
}

// TestSeedsAreAProject: the canary project has what a project has (a
// package.json, a README, src/, tests/, a .gitignore) and a git clone
// whose planted files are all recognisable: every one has a role, and
// every object id and the pack's name have placeholders.
func TestSeedsAreAProject(t *testing.T) {
	b := NewBait(7).At(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	files, repo := b.seeds()
	have := map[string]SeedFile{}
	for _, s := range files {
		have[strings.TrimPrefix(s.Path, b.Canary.Dir+"/")] = s
		if s.Role == "" || s.ModTime.IsZero() || s.ModTime.After(b.Now) {
			t.Errorf("%s: role %q, time %s", s.Path, s.Role, s.ModTime)
		}
	}
	for _, want := range []string{"package.json", "README.md", "src/index.js", "src/lib/util.js", "tests/index.test.js", ".gitignore",
		".git/HEAD", ".git/config", ".git/index", ".git/refs/heads/main", ".git/objects/pack/pack-" + repo.packSum + ".pack"} {
		if _, ok := have[want]; !ok {
			t.Errorf("no %s in the project", want)
		}
	}
	if len(repo.objects) < 3*len(gitHistory) {
		t.Errorf("%d objects for %d commits", len(repo.objects), len(gitHistory))
	}
	// The index is the youngest of the project's files: git takes no
	// entry as racily clean.
	idx := have[".git/index"].ModTime
	for rel, s := range have {
		if rel != ".git/index" && strings.HasPrefix(s.Path, b.Canary.Dir) && !s.ModTime.Before(idx) {
			t.Errorf("%s (%s) is not older than the index (%s)", rel, s.ModTime, idx)
		}
	}
	ps := b.Placeholders()
	text := repo.head.hex() + " " + repo.head.hex()[:gitShort] + " pack-" + repo.packSum + ".idx"
	head := fmt.Sprintf("<git-commit-%d>", len(gitHistory))
	if got := report.RedactString(text, ps); got != head+" "+strings.TrimSuffix(head, ">")+":short> pack-<git-pack>.idx" {
		t.Errorf("redacted %q", got)
	}
}

// TestSeedsAreAGitClone runs the host's git on the planted project: the
// history is there with its fixed dates, the repository is sound, the
// tree is mid-work (a staged file, two stash entries, a second branch),
// and a status writes nothing (not even the index), so a read-only git
// tool stays read-only; one stash entry pops and the other applies. Two draws give histories that read
// the same once redacted.
func TestSeedsAreAGitClone(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on this host")
	}
	now := time.Now()
	logs := map[string]bool{}
	for _, seed := range []uint64{1, 2} {
		b := NewBait(seed).At(now)
		root := t.TempDir()
		dir := plant(t, b, root)
		git := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
			cmd.Env = append(os.Environ(), "HOME="+filepath.Join(root, "home/sandbox"), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		index := filepath.Join(dir, ".git/index")
		before, _ := os.ReadFile(index)
		st, _ := os.Stat(index)
		git("fsck", "--strict", "--no-dangling")
		if out := git("status", "--porcelain", "--branch"); out != "## main...origin/main\nA  CHANGELOG.md\n" {
			t.Errorf("seed %d: status %q", seed, out)
		}
		after, _ := os.ReadFile(index)
		st2, _ := os.Stat(index)
		if !bytes.Equal(before, after) || !st.ModTime().Equal(st2.ModTime()) {
			t.Errorf("seed %d: git status rewrote the index", seed)
		}
		log := git("log", "--format=%h %H %an <%ae> %ad %s", "--date=iso")
		if n := strings.Count(log, "\n"); n != len(gitHistory) {
			t.Errorf("seed %d: %d commits:\n%s", seed, n, log)
		}
		if !strings.Contains(log, "2025-03-12 14:27:19 +0100 Add default config") {
			t.Errorf("seed %d: log %s", seed, log)
		}
		if out := git("ls-files"); strings.Count(out, "\n") != 18 || !strings.Contains(out, "design/overview.pdf\n") || !strings.Contains(out, "data/app.db\n") {
			t.Errorf("seed %d: ls-files %q", seed, out)
		}
		if out := git("branch", "--format=%(refname:short)"); out != "main\nrelease-1.4\n" {
			t.Errorf("seed %d: branches %q", seed, out)
		}
		if out := git("stash", "list"); !strings.HasPrefix(out, "stash@{0}: WIP on main: ") || strings.Count(out, "\n") != 2 {
			t.Errorf("seed %d: stash list %q", seed, out)
		}
		git("stash", "pop")
		git("stash", "apply")
		if out := git("diff", "--stat"); !strings.Contains(out, "config/default.json") || !strings.Contains(out, "src/lib/util.js") {
			t.Errorf("seed %d: after stash pop and apply %q", seed, out)
		}
		logs[report.RedactString(log, b.Placeholders())] = true
	}
	if len(logs) != 1 {
		t.Errorf("two draws, two redacted logs: %v", logs)
	}
	for l := range logs {
		if !strings.Contains(l, "<git-commit-1:short> <git-commit-1> <git-user> <<git-user>@users.noreply.github.com>") {
			t.Errorf("log not redacted: %s", l)
		}
	}
}
