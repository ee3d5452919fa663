package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// Attacks on dockerLine, hostScript and the wrap command. Each test
// asserts the SAFE outcome: a failing test is an attack that works.

// TestAttackDockerLineRefused: docker run spellings that weaken the
// sandbox must be refused (an error), never taken.
func TestAttackDockerLineRefused(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "npmrc")
	if err := os.WriteFile(secret, []byte("//registry.npmjs.org/:_authToken=npm_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "dir")); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(atkWd(t), secret)
	for _, opt := range [][]string{
		{"--volume=/:/h"}, {"-v=/:/h"}, {"-v/:/h"}, {"--privileged=true"}, {"--privileged=false"}, {"--cap-add=ALL"},
		{"--security-opt=seccomp=unconfined"}, {"--net=host"}, {"--network=container:x"}, {"--pid=container:x"},
		{"-itv", "/:/h"}, {"-vi", "/:/h"}, {"-iv/:/h"}, {"--mount=type=bind,src=/,dst=/h"}, {"--mo", "type=bind,src=/,dst=/h"},
		{"--user", "0:0"}, {"-u", "root"}, {"--user=0"}, {"-u", "00"}, {"--user=000:0"}, {"-u", "0000000000"},
		{"--userns=host"}, {"--cgroup-parent", "/"}, {"--oom-kill-disable"}, {"--read-only=false"}, {"--restart", "always"},
		{"--shm-size", "100g"}, {"--ulimit", "nofile=1048576"}, {"--log-driver", "json-file"}, {"--link", "x"}, {"--expose", "80"},
		{"--env-file", filepath.Join(ws, "link.env")}, {"--env-file", filepath.Join(ws, "dir", "npmrc")}, {"--env-file", rel},
		{"--env-file", filepath.Join(ws, "..", filepath.Base(outside), "npmrc")}, {"--env-file=" + secret},
		{"-e", "MCPSANDBOX_AGENT_CHILD=1"}, {"--env=MCPSANDBOX_AGENT_CHILD=1"},
		{"--gpus", "all"}, {"--isolation", "host"}, {"--volume-driver", "x"}, {"--cidfile", "/etc/x"},
	} {
		so := &sandbox.SessionOptions{Workspace: ws, Argv: append(append([]string{"docker", "run", "-i", "--rm"}, opt...), "img", "a")}
		ok, err := dockerLine(so)
		if !ok || err == nil {
			t.Errorf("%q: taken (ok %v): image %q args %q env %q user %q entrypoint %q", opt, ok, so.Image, so.ImageArgs, so.Env, so.User, so.ImageEntrypoint)
		}
	}
}

// TestAttackDockerLineGroupRoot: -u UID:0 runs in the root group.
func TestAttackDockerLineGroupRoot(t *testing.T) {
	so := &sandbox.SessionOptions{Argv: []string{"docker", "run", "-i", "-u", "1000:0", "img"}}
	if _, err := dockerLine(so); err == nil {
		t.Errorf("-u 1000:0: taken, user %q (gid 0, the root group)", so.User)
	}
}

// TestAttackDockerLineImageShape: what is taken as the image.
func TestAttackDockerLineImageShape(t *testing.T) {
	for _, argv := range [][]string{
		{"docker", "run", "-i", "--name", "--privileged", "img"}, // a value that looks like an option: harmless
		{"docker", "run", "-i", "-h", "-v", "img"},
	} {
		so := &sandbox.SessionOptions{Argv: argv}
		ok, err := dockerLine(so)
		if ok && err == nil && so.Image != "img" {
			t.Errorf("%q: image %q", argv, so.Image)
		}
	}
}

func atkWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func atkWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostMount runs hostScript on argv; it returns what it mounts ("" for
// nothing or refused) and the error.
func atkMount(t *testing.T, argv ...string) (string, []string, error) {
	t.Helper()
	so := &sandbox.SessionOptions{Argv: append([]string{}, argv...)}
	err := hostScript(so, io.Discard)
	return so.Package, so.Argv, err
}

// TestAttackHostScriptAboveHome: a marker only in $HOME, or in a
// directory above $HOME, must not mount it.
func TestAttackHostScriptAboveHome(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home", "u")
	t.Setenv("HOME", home)
	atkWrite(t, filepath.Join(home, "proj", "x.js"), "")
	// Only $HOME/package.json: refused.
	atkWrite(t, filepath.Join(home, "package.json"), "{}")
	if pkg, _, err := atkMount(t, "node", filepath.Join(home, "proj", "x.js")); pkg != "" || err == nil {
		t.Errorf("$HOME/package.json: mounts %q (err %v), want refused", pkg, err)
	}
	os.Remove(filepath.Join(home, "package.json"))
	// /home/package.json (every user's home): refused.
	atkWrite(t, filepath.Join(base, "home", "package.json"), "{}")
	if pkg, _, err := atkMount(t, "node", filepath.Join(home, "proj", "x.js")); pkg != "" {
		t.Errorf("a marker above $HOME (%s): mounts %q (err %v), the whole home with it; want refused", filepath.Join(base, "home"), pkg, err)
	}
}

// TestAttackHostScriptHomeThroughSymlink: $HOME reached through a
// symlink is still $HOME.
func TestAttackHostScriptHomeThroughSymlink(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "u")
	t.Setenv("HOME", home)
	atkWrite(t, filepath.Join(home, "package.json"), "{}")
	atkWrite(t, filepath.Join(home, "proj", "x.js"), "")
	link := filepath.Join(base, "h")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	if pkg, _, err := atkMount(t, "node", filepath.Join(link, "proj", "x.js")); pkg != "" {
		t.Errorf("$HOME through %s: mounts %q (= $HOME) (err %v), want refused", link, pkg, err)
	}
	// The home itself a symlink (/home -> /data/home): the script named by its real path.
	real := filepath.Join(base, "data", "u")
	atkWrite(t, filepath.Join(real, "package.json"), "{}")
	atkWrite(t, filepath.Join(real, "proj", "x.js"), "")
	homeLink := filepath.Join(base, "homelink")
	if err := os.Symlink(real, homeLink); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", homeLink)
	if pkg, _, err := atkMount(t, "node", filepath.Join(real, "proj", "x.js")); pkg != "" {
		t.Errorf("HOME=%s (a symlink to %s): mounts %q (err %v), want refused", homeLink, real, pkg, err)
	}
}

// TestAttackHostScriptSharedTemp: a package.json planted in the shared
// temporary directory (here TMPDIR, as /tmp) makes all of it the
// project: every user's and program's temporary files in the sandbox.
func TestAttackHostScriptSharedTemp(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	atkWrite(t, filepath.Join(tmp, "package.json"), "{}")
	atkWrite(t, filepath.Join(tmp, "other-user", "secret"), "s")
	atkWrite(t, filepath.Join(tmp, "scan123", "x.js"), "")
	if pkg, _, err := atkMount(t, "node", filepath.Join(tmp, "scan123", "x.js")); pkg == tmp {
		t.Errorf("a package.json planted in the temp dir %s: mounts all of it (err %v)", tmp, err)
	}
}

// TestAttackHostScriptArgs: an interpreter's flag that takes a value,
// -m, relative paths, symlinked script.
func TestAttackHostScriptArgs(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	atkWrite(t, filepath.Join(proj, "package.json"), "{}")
	atkWrite(t, filepath.Join(proj, "server.js"), "")
	atkWrite(t, filepath.Join(proj, "evil.js"), "")
	other := t.TempDir()
	atkWrite(t, filepath.Join(other, "pyproject.toml"), "")
	atkWrite(t, filepath.Join(other, "pre.js"), "")
	// node -r OTHER/pre.js PROJ/server.js: the script is server.js.
	pkg, argv, err := atkMount(t, "node", "--require", filepath.Join(other, "pre.js"), filepath.Join(proj, "server.js"))
	if err != nil || pkg != proj {
		t.Errorf("node --require X server.js: mounts %q (argv %q, err %v), want the server's project %s", pkg, argv, err, proj)
	}
	// python3 -m mod: nothing.
	if pkg, _, err := atkMount(t, "python3", "-m", "mod"); pkg != "" || err != nil {
		t.Errorf("python3 -m: %q %v", pkg, err)
	}
	// A script that is a symlink into /etc: the link is the project's,
	// the container resolves it inside; never /etc mounted.
	if err := os.Symlink("/etc/passwd", filepath.Join(proj, "p.js")); err != nil {
		t.Fatal(err)
	}
	if pkg, _, _ := atkMount(t, "node", filepath.Join(proj, "p.js")); pkg != "" && pkg != proj {
		t.Errorf("symlinked script: mounts %q", pkg)
	}
	// /usr reached through ..: still not the host's code mounted from /usr.
	if pkg, _, _ := atkMount(t, "node", "/tmp/../usr/lib/x.js"); strings.HasPrefix(pkg, "/usr") || pkg == "/" {
		t.Errorf("/tmp/../usr: mounts %q", pkg)
	}
	// A relative ../ script.
	wd := atkWd(t)
	t.Chdir(filepath.Join(proj))
	defer os.Chdir(wd)
	atkWrite(t, filepath.Join(proj, "sub", "package.json"), "{}")
	t.Chdir(filepath.Join(proj, "sub"))
	if pkg, argv, err := atkMount(t, "node", "../server.js"); err != nil || pkg != proj || argv[1] != "/project/server.js" {
		t.Errorf("node ../server.js: %q %q %v", pkg, argv, err)
	}
}

// TestAttackWrapSymlinkedConfig: a configuration that is a symlink
// (dotfiles): wrap replaces the link with a file, or writes through?
func TestAttackWrapSymlinkedConfig(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "claude.json")
	atkWrite(t, target, `{"mcpServers": {"a": {"command": "node", "args": ["x.js"]}}}`)
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.Symlink(target, cfg); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := exitCode(run(context.Background(), []string{"wrap", "--bin", "/opt/mcpsandbox", cfg}, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("wrap: %d %s%s", code, stdout.String(), stderr.String())
	}
	fi, _ := os.Lstat(cfg)
	tb, _ := os.ReadFile(target)
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlinked configuration is replaced by a file (the link to %s is lost; the target is left %s)", target, tb)
	}
	// unwrap: the link is not back either.
	stdout.Reset()
	stderr.Reset()
	if code := exitCode(run(context.Background(), []string{"unwrap", cfg}, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("unwrap: %d %s%s", code, stdout.String(), stderr.String())
	}
	if fi, _ := os.Lstat(cfg); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("after unwrap, %s is a file, no longer a link to %s", cfg, target)
	}
}

// TestAttackWrapPlantedBackupLink: a backup path planted as a symlink
// is never written through.
func TestAttackWrapPlantedBackupLink(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	atkWrite(t, cfg, `{"mcpServers": {"a": {"command": "node"}}}`)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(victim, cfg+backupSuffix); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	exitCode(run(context.Background(), []string{"wrap", "--bin", "/opt/mcpsandbox", cfg}, &stdout, &stderr), &stderr)
	if _, err := os.Stat(victim); err == nil {
		t.Errorf("the backup is written through the planted link to %s", victim)
	}
	// A link to an existing file: refused, the file untouched.
	atkWrite(t, victim, "keep")
	os.Remove(cfg + backupSuffix)
	atkWrite(t, cfg, `{"mcpServers": {"a": {"command": "node"}}}`)
	os.Symlink(victim, cfg+backupSuffix)
	exitCode(run(context.Background(), []string{"wrap", "--bin", "/opt/mcpsandbox", cfg}, &stdout, &stderr), &stderr)
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the victim is rewritten: %q", b)
	}
}
