package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// hostWorkspace is seedWorkspace owned as a checkout usually is: by a user
// who is not the sandbox's (1000), with one directory of root's.
func hostWorkspace(t *testing.T) string {
	t.Helper()
	dir := seedWorkspace(t)
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}))
	must(t, os.Mkdir(filepath.Join(dir, "rootdir"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "rootdir", "r.txt"), []byte("root's\n"), 0o644))
	return dir
}

// manifest is every entry of dir with everything a write would change:
// type and mode, owner, size, mtime, ctime (which no user can set back),
// content hash, link target. Only atime is left out (reading sets it).
func manifest(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		v := fmt.Sprintf("mode %o uid %d gid %d size %d mtime %d ctime %d", st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Nano(), st.Ctim.Nano())
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " sha256 " + hex.EncodeToString(h[:])
		case syscall.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + l
		}
		m[p] = v
		return nil
	}))
	return m
}

// TestWorkspaceIsMountedNotCopied: the host directory reaches the server
// copy-on-write with nothing copied; the server (not root, not the files'
// owner) creates, modifies and deletes as it could in a copy; the changes
// are read by the same classifier; the host directory is byte for byte
// (and ctime for ctime) what it was; the container's mount table names no
// host path of ours.
func TestWorkspaceIsMountedNotCopied(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	ws := hostWorkspace(t)
	before := manifest(t, ws)
	opts := fixtureOpts(t, "honest", "liar", "ws")
	opts.Workspace = ws
	opts.Probes = steps(t, `[{"tool":"tidy"},{"tool":"add_note","arguments":{"text":"n"}},{"tool":"read_any","arguments":{"path":"/proc/self/mountinfo"}},{"tool":"list_workspace"}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if r.Sandbox.WorkspaceBy != "mount" {
		t.Fatalf("workspace by %q, want mount; problems %+v", r.Sandbox.WorkspaceBy, r.Problems)
	}
	files := func(tool string) []string {
		var out []string
		for _, c := range callsOf(r, tool) {
			for _, f := range c.Effects.Files {
				out = append(out, f.Change.String()+" "+f.Path)
			}
		}
		return out
	}
	if got, want := files("tidy"), []string{"modified /workspace/data.json", "deleted /workspace/seed.txt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tidy effects = %q, want %q", got, want)
	}
	if got, want := files("add_note"), []string{"created /workspace/notes", "created /workspace/notes/note-1.txt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("add_note effects = %q, want %q", got, want)
	}
	if c := callsOf(r, "list_workspace"); len(c) != 1 || !strings.Contains(c[0].Result, "/workspace/rootdir/r.txt") || strings.Contains(c[0].Result, "seed.txt") {
		t.Errorf("the server's view of /workspace: %+v", c)
	}
	mi := callsOf(r, "read_any")
	if len(mi) != 1 || !strings.Contains(mi[0].Result, " /workspace ") {
		t.Fatalf("mountinfo: %+v", mi)
	}
	for _, host := range []string{ws, stateDirName} {
		if strings.Contains(mi[0].Result, host) {
			t.Errorf("the container's mountinfo names %q:\n%s", host, mi[0].Result)
		}
	}
	if after := manifest(t, ws); !reflect.DeepEqual(before, after) {
		t.Errorf("host workspace changed:\nbefore %v\nafter  %v", before, after)
	}
	for _, p := range r.Problems {
		if p.Kind == "workspace-host-changed" {
			t.Errorf("a host edit was reported where there was none: %+v", p)
		}
	}
}

// stateDirName is the directory the mount's state lives in, in the
// container's layer directory (sandbox.workspaceState).
const stateDirName = "mcpsandbox-ws"

// TestHostEditDuringRunIsReported: a file made in the host directory by
// someone else while the server runs is reported as a host change, never
// as the server's. (Whether the server sees it depends on what overlayfs
// cached: it does not promise to show changes made under it.)
func TestHostEditDuringRunIsReported(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	ws := hostWorkspace(t)
	opts := fixtureOpts(t, "ws")
	opts.Workspace = ws
	opts.Probes = steps(t, `[{"tool":"wait_file","arguments":{"path":"/workspace/late.txt","seconds":3}}]`)
	opts.RunID = label.NewRunID()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Once the server runs, someone edits the host directory.
		for i := 0; i < 600; i++ {
			list, _ := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label.Run+"="+opts.RunID))})
			if len(list) > 0 {
				time.Sleep(300 * time.Millisecond)
				os.WriteFile(filepath.Join(ws, "late.txt"), []byte("from the host\n"), 0o644)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := scanWithRunID(t, cli, opts)
	<-done
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	var msg string
	for _, p := range r.Problems {
		if p.Kind == "workspace-host-changed" {
			msg = p.Message
		}
	}
	if !strings.Contains(msg, "/late.txt") {
		t.Errorf("no workspace-host-changed problem naming /late.txt: %+v", r.Problems)
	}
	for _, c := range r.Calls {
		for _, f := range c.Effects.Files {
			if strings.Contains(f.Path, "late.txt") {
				t.Errorf("the host's edit is reported as the server's: %+v", f)
			}
		}
	}
}

// TestAPIChangesGetTheCopiedWorkspace: the Engine API cannot see a mount,
// so --changes api copies the workspace, and the report says so.
func TestAPIChangesGetTheCopiedWorkspace(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Workspace = hostWorkspace(t)
	opts.Changes = sandbox.ChangesAPI
	opts.Probes = steps(t, `[{"tool":"add_note","arguments":{"text":"n"}}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if r := res.Report; r.Sandbox.WorkspaceBy != "copy" || len(callsOf(r, "add_note")[0].Effects.Files) != 2 {
		t.Fatalf("workspace by %q, add_note %+v", r.Sandbox.WorkspaceBy, callsOf(r, "add_note"))
	}
}

// TestRunnerKilledLeavesNothing: a runner killed with SIGKILL mid-call
// cannot clean up; the host directory is untouched all the same, the
// mount lives only in the container's namespace, and once the next run
// reaps the container nothing of ours is left: no container, no state
// directory.
func TestRunnerKilledLeavesNothing(t *testing.T) {
	cli := sandboxtest.Docker(t)
	ws := hostWorkspace(t)
	before := manifest(t, ws)
	fx := sandboxtest.Fixture(t)
	sandboxtest.NodeImage(t, cli)
	runner := exec.Command(sandboxtest.Runner(t), "scan", "--agent", sandboxtest.Agent(t), "--format", "json", "--out", os.DevNull,
		"--workspace", ws, "--call-timeout", "2m", "--probes", writeProbes(t, `{"hang":{}}`),
		"--mount", fx.Source+":"+fx.Target, "--", fx.Target, "hang")
	must(t, runner.Start())
	t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })

	// Its sandbox, once the server is hanging in its call.
	var id, layer string
	owner := fmt.Sprintf(":%d:", runner.Process.Pid)
	for i := 0; i < 600 && layer == ""; i++ {
		time.Sleep(50 * time.Millisecond)
		list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
		must(t, err)
		for _, c := range list {
			if strings.Contains(c.Labels[label.Owner], owner) {
				id = c.ID
				in, err := cli.ContainerInspect(context.Background(), c.ID)
				must(t, err)
				dir := filepath.Dir(in.GraphDriver.Data["UpperDir"])
				if _, err := os.Stat(filepath.Join(dir, stateDirName)); err == nil {
					layer = dir
				}
			}
		}
	}
	if layer == "" {
		t.Fatal("the runner's sandbox never had its workspace mounted")
	}
	time.Sleep(500 * time.Millisecond) // into the call
	must(t, runner.Process.Signal(syscall.SIGKILL))
	runner.Wait()

	if after := manifest(t, ws); !reflect.DeepEqual(before, after) {
		t.Errorf("host workspace changed:\nbefore %v\nafter  %v", before, after)
	}
	// Another process's scan on the engine may reap the orphan first: what
	// counts is that it goes.
	_, err := sandbox.Reap(context.Background(), cli)
	must(t, err)
	waitGone(t, cli, id)
	if _, err := os.Stat(layer); !os.IsNotExist(err) {
		t.Errorf("the container's layer directory (with the workspace's state) is still there: %v", err)
	}
	assertNoMountOf(t, cli, id)
}

// assertNoMountOf checks that no process on the host still sees a mount
// whose state lived in container id's layer.
func assertNoMountOf(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	if _, err := cli.ContainerInspect(context.Background(), id); err == nil {
		t.Errorf("container %.12s is still there", id)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	if strings.Contains(string(b), stateDirName) {
		t.Errorf("the host's mount table names %s:\n%s", stateDirName, b)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func writeProbes(t *testing.T, js string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probes.json")
	must(t, os.WriteFile(p, []byte(js), 0o644))
	return p
}

// scanWithRunID is scan with the run id the caller chose.
func scanWithRunID(t *testing.T, cli *client.Client, opts scan.Options) (scan.Result, error) {
	t.Helper()
	if opts.Image == "" {
		opts.Image = sandboxtest.NodeImage(t, cli)
	}
	if opts.Agent == "" {
		opts.Agent = sandboxtest.Agent(t)
	}
	sandboxtest.NoLeftovers(t, cli, opts.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), scanBound)
	defer cancel()
	res, err := scan.Run(ctx, cli, opts)
	res.Report.Finish()
	return res, err
}

// TestPackageIsCopyOnWrite: --package gives the server its code as the
// workspace is given, by mount or by copy: the server runs from it, writes
// next to its code (a cache, an append), and those writes are its call's
// file effects; the host directory is byte for byte what it was; a
// package target where the image has nothing is made before the baseline,
// not an effect.
func TestPackageIsCopyOnWrite(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, copied := range []bool{false, true} {
		t.Run(map[bool]string{false: "mount", true: "copy"}[copied], func(t *testing.T) {
			pkg := t.TempDir()
			bin, err := os.ReadFile(sandboxtest.Fixture(t).Source)
			must(t, err)
			must(t, os.WriteFile(filepath.Join(pkg, "server"), bin, 0o755))
			must(t, os.WriteFile(filepath.Join(pkg, "data.txt"), []byte("data\n"), 0o644))
			must(t, filepath.WalkDir(pkg, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, 1000, 1000)
			}))
			ws := hostWorkspace(t)
			before, wsBefore := manifest(t, pkg), manifest(t, ws)
			opts := scan.Options{SessionOptions: sandbox.SessionOptions{Argv: []string{"/srv/mcp/pkg/server", "ws"}, Workspace: ws, Package: pkg, PackageTarget: "/srv/mcp/pkg", CopyWorkspace: copied}}
			opts.Probes = steps(t, `[{"tool":"write_beside"},{"tool":"read_any","arguments":{"path":"/workspace/rootdir/r.txt"}}]`)
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			want := map[bool]string{false: "mount", true: "copy"}[copied]
			if r.Sandbox.WorkspaceBy != want || r.Sandbox.Package != "/srv/mcp/pkg" {
				t.Fatalf("package by %q at %q, want %s at /srv/mcp/pkg; problems %+v", r.Sandbox.WorkspaceBy, r.Sandbox.Package, want, r.Problems)
			}
			var got []string
			for _, c := range callsOf(r, "write_beside") {
				if c.Error != "" || c.IsError {
					t.Fatalf("write_beside failed: %+v", c)
				}
				for _, f := range c.Effects.Files {
					got = append(got, f.Change.String()+" "+f.Path)
				}
			}
			if w := []string{"created /srv/mcp/pkg/cache", "created /srv/mcp/pkg/cache/state.json", "modified /srv/mcp/pkg/data.txt"}; !reflect.DeepEqual(got, w) {
				t.Errorf("write_beside effects = %q, want %q", got, w)
			}
			for _, ph := range r.Phases {
				for _, f := range ph.Effects.Files {
					if strings.HasPrefix(f.Path, "/srv") {
						t.Errorf("phase %s has %s %s", ph.Name, f.Change, f.Path)
					}
				}
			}
			if after := manifest(t, pkg); !reflect.DeepEqual(before, after) {
				t.Errorf("host package changed:\nbefore %v\nafter  %v", before, after)
			}
			if after := manifest(t, ws); !reflect.DeepEqual(wsBefore, after) {
				t.Errorf("host workspace changed:\nbefore %v\nafter  %v", wsBefore, after)
			}
			if c := callsOf(r, "read_any"); len(c) != 1 || !strings.Contains(c[0].Result, "root's") {
				t.Errorf("the server's view of /workspace: %+v", c)
			}
		})
	}
}
