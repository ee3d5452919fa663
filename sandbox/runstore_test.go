package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestRunStore(t *testing.T) {
	st := sandbox.RunStore{Root: t.TempDir()}
	if runs, err := st.List(); err != nil || len(runs) != 0 {
		t.Fatalf("empty store: %v %v", runs, err)
	}
	t0 := time.Date(2026, 12, 1, 9, 52, 0, 0, time.UTC)
	b := overlay.Baseline{Files: map[string]overlay.FileID{"a.txt": {Type: overlay.File, Size: 3}}}
	for i, name := range []string{"second", "first"} {
		m := sandbox.RunMeta{Name: name, Command: []string{"npx", "srv"}, Created: t0.Add(time.Duration(-i) * time.Minute), State: sandbox.RunStopped}
		if err := st.Create(m, &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(sandbox.RunMeta{Name: "first"}, nil); !errors.Is(err, sandbox.ErrRunExists) {
		t.Errorf("a second run named first: %v", err)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 101)} {
		if err := st.Create(sandbox.RunMeta{Name: bad}, nil); !errors.Is(err, sandbox.ErrRunName) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	runs, err := st.List()
	if err != nil || len(runs) != 2 || runs[0].Name != "first" || runs[1].State != sandbox.RunStopped {
		t.Fatalf("list: %+v %v", runs, err)
	}
	if got, err := st.Baseline("first"); err != nil || got.Files["a.txt"].Size != 3 {
		t.Errorf("baseline: %+v %v", got, err)
	}
	if err := st.Remove(context.Background(), nil, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("first"); !errors.Is(err, sandbox.ErrNoRun) {
		t.Errorf("removed run: %v", err)
	}
}

func TestStateRoot(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if r, _ := sandbox.StateRoot(); r != "/x/state/mcpsandbox" {
		t.Errorf("with XDG_STATE_HOME: %s", r)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if r, _ := sandbox.StateRoot(); r != "/home/u/.local/state/mcpsandbox" {
		t.Errorf("without: %s", r)
	}
}

func TestDefaultRunName(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 52, 7, 0, time.UTC)
	for argv, want := range map[string]string{
		"npx -y @modelcontextprotocol/server-filesystem /w": "20261201-095207-server-filesystem",
		"node /srv/index.js": "20261201-095207-index.js",
		"":                   "20261201-095207-server",
		"python3 -m srv":     "20261201-095207-srv",
		"/bin/we$ird;name":   "20261201-095207-we-ird-name",
	} {
		got := sandbox.DefaultRunName(at, strings.Fields(argv))
		if got != want || sandbox.CheckRunName(got) != nil {
			t.Errorf("DefaultRunName(%q) = %q, want %q", argv, got, want)
		}
	}
}

// TestStateAcrossScans: a server's data outside the workspace (its home
// directory) is there again in the next scan with the same --state, as
// the starting state (not an effect), and not in a scan without it.
func TestStateAcrossScans(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	store := sandbox.RunStore{Root: t.TempDir()}
	scanWith := func(state bool, probe string) *report.Report {
		t.Helper()
		opts := fixtureOpts(t, "runws")
		opts.NoBoundary = true
		if state {
			sd, err := store.OpenState("memory")
			if err != nil {
				t.Fatal(err)
			}
			opts.State = sd
		}
		opts.Probes = steps(t, probe)
		res, err := runScan(t, cli, opts)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		return res.Report
	}
	recall := func(r *report.Report) report.Call {
		for _, c := range r.Calls {
			if c.Tool == "recall" {
				return c
			}
		}
		t.Fatalf("recall not called: %+v", r.Calls)
		return report.Call{}
	}
	scanWith(true, `[{"tool":"remember","arguments":{"text":"the first scan was here"}}]`)
	if _, err := os.Stat(filepath.Join(store.Root, "states", "memory", "files.tar")); err != nil {
		t.Fatalf("no state saved: %v", err)
	}
	r := scanWith(true, `[{"tool":"recall"}]`)
	c := recall(r)
	if !strings.Contains(c.Result, "the first scan was here") {
		t.Errorf("second scan's recall: %q (problems %+v)", c.Result, r.Problems)
	}
	for _, p := range r.Phases {
		for _, f := range p.Effects.Files {
			if strings.Contains(f.Path, ".fixture-memory") {
				t.Errorf("the restored state is an effect of phase %s: %+v", p.Name, f)
			}
		}
	}
	if c := recall(scanWith(false, `[{"tool":"recall"}]`)); !strings.Contains(c.Result, "(empty)") {
		t.Errorf("a scan without --state remembers: %q", c.Result)
	}
}

// TestNamedRunChangesApply: a kept run's workspace edits stay in its
// stopped container until applied; the reaper leaves the container;
// changes lists the edit and apply writes it to the host; clean removes
// the run.
func TestNamedRunChangesApply(t *testing.T) {
	cli := sandboxtest.Docker(t)
	ctx := context.Background()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "keep.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := overlay.TakeBaseline(host, overlay.BaselineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	s, err := sandbox.Open(ctx, cli, sandbox.SessionOptions{Image: sandboxtest.NodeImage(t, cli),
		Argv: []string{sandboxtest.FixtureMount, "honest"}, Mounts: []sandbox.Mount{sandboxtest.Fixture(t)},
		Workspace: host, Keep: true, RunID: runID})
	if err != nil {
		s.Close(ctx)
		t.Fatalf("open: %v", err)
	}
	upper := s.WorkspaceUpper()
	args, _ := json.Marshal(map[string]string{"text": "from the run"})
	if c := s.Call(ctx, sandbox.CallRequest{Seq: 1, Tool: "add_note", Arguments: args}); c.Error != "" || c.IsError {
		t.Fatalf("add_note: %+v", c)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if upper == "" || s.Kept() == "" {
		t.Fatalf("upper %q kept %q: the workspace was not mounted or the container not kept", upper, s.Kept())
	}
	store := sandbox.RunStore{Root: t.TempDir()}
	meta := sandbox.RunMeta{Name: "edit", Command: []string{"fixture"}, Workspace: host, Upper: upper, Container: s.Kept(), Created: time.Now(), State: sandbox.RunStopped}
	if err := store.Create(meta, &base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Remove(context.WithoutCancel(ctx), cli, "edit") })
	if removed, err := sandbox.Reap(ctx, cli); err != nil || slices.Contains(removed, s.Kept()) {
		t.Errorf("the reaper removed the kept run: %v %v", removed, err)
	}
	if m, err := store.Refresh(ctx, cli, meta); err != nil || m.State != sandbox.RunStopped {
		t.Errorf("the kept run is %v (%v), want stopped", m.State, err)
	}
	o, err := store.ApplyOptions(ctx, cli, "edit")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := overlay.Changes(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Path != "notes" || cs[1].Path != "notes/note-1.txt" || !strings.Contains(cs[1].Diff, "+from the run") {
		t.Fatalf("changes: %+v", cs)
	}
	if _, err := os.Stat(filepath.Join(host, "notes")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the run wrote to the host before apply: %v", err)
	}
	res, err := overlay.Apply(o)
	if err != nil || len(res.Refused) > 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "notes", "note-1.txt")); err != nil || string(b) != "from the run\n" {
		t.Errorf("applied note: %q %v", b, err)
	}
	if err := store.Remove(ctx, cli, "edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, meta.Container); err == nil {
		t.Error("the run's container is still there after clean")
	}
}

// TestNamedRunLifecycle: a named run is recorded before anything starts
// (a name taken is refused then), with its workspace's baseline, running;
// kept, it is stopped with its container; one that kept no container is
// forgotten, as is one whose scan never kept any (Forget), and Forget
// after Kept leaves the record.
func TestNamedRunLifecycle(t *testing.T) {
	st := sandbox.RunStore{Root: t.TempDir()}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so := sandbox.SessionOptions{Argv: []string{"srv"}, Image: "img", Workspace: ws}
	n, err := sandbox.BeginNamedRun(st, "kept", so)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.BeginNamedRun(st, "kept", so); !errors.Is(err, sandbox.ErrRunExists) {
		t.Errorf("the name twice: %v", err)
	}
	if m, err := st.Get("kept"); err != nil || m.State != sandbox.RunRunning || m.Workspace != ws {
		t.Errorf("begun: %+v %v", m, err)
	}
	if _, err := st.Baseline("kept"); err != nil {
		t.Errorf("no baseline: %v", err)
	}
	msg, err := n.Kept(sandbox.KeptSession{Container: "c0ffee", WorkspaceUpper: "/upper"})
	if err != nil || !strings.HasPrefix(msg, "kept run kept (") || strings.Contains(msg, "cannot be applied") {
		t.Errorf("kept: %q %v", msg, err)
	}
	if err := n.Forget(); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Get("kept"); err != nil || m.State != sandbox.RunStopped || m.Container != "c0ffee" {
		t.Errorf("kept then forgotten: %+v %v", m, err)
	}
	for name, end := range map[string]func(*sandbox.NamedRun) error{
		"nothing-kept": func(n *sandbox.NamedRun) error {
			msg, err := n.Kept(sandbox.KeptSession{})
			return errors.Join(err, isEmpty(msg))
		},
		"never-started": (*sandbox.NamedRun).Forget,
	} {
		n, err := sandbox.BeginNamedRun(st, name, sandbox.SessionOptions{Argv: []string{"srv"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := end(n); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := st.Get(name); err == nil {
			t.Errorf("%s: still recorded", name)
		}
		if _, err := sandbox.BeginNamedRun(st, name, sandbox.SessionOptions{}); err != nil {
			t.Errorf("%s: the name is not free again: %v", name, err)
		}
	}
}

func isEmpty(s string) error {
	if s != "" {
		return errors.New("a line for a run that kept nothing: " + s)
	}
	return nil
}

// TestNamedRunWhoseRunnerDied: a named run's record is made before its
// container; a runner killed in between (SIGKILL: nothing of it runs on)
// leaves a record with no container that would say "running" forever.
// Its runner's death makes it gone, and a new run of that name is
// refused with the way to free it (never taken over: two runners doing
// so at once could remove each other's record).
func TestNamedRunWhoseRunnerDied(t *testing.T) {
	st := sandbox.RunStore{Root: t.TempDir()}
	ctx := context.Background()
	n, err := sandbox.BeginNamedRun(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Get(n.Name())
	if err != nil {
		t.Fatal(err)
	}
	if m.Owner != label.SelfOwner() {
		t.Fatalf("record's owner %q, want this runner's %q", m.Owner, label.SelfOwner())
	}
	if r, err := st.Refresh(ctx, nil, m); err != nil || r.State != sandbox.RunRunning {
		t.Errorf("refresh while its runner lives: %v, %v; want running", r.State, err)
	}

	m.Owner = deadOwner(t) // the runner was killed before Started
	if err := st.Update(m); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Refresh(ctx, nil, m); err != nil || r.State != sandbox.RunGone {
		t.Errorf("refresh once its runner died: %v, %v; want gone", r.State, err)
	}
	_, err = sandbox.BeginNamedRun(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}})
	if !errors.Is(err, sandbox.ErrRunExists) || !strings.Contains(err.Error(), "mcpsandbox clean srv") {
		t.Errorf("a new run of the dead one's name: %v, want refused with the way to free it", err)
	}
	if err := st.Remove(ctx, nil, "srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.BeginNamedRun(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}}); err != nil {
		t.Errorf("once removed: %v", err)
	}
}
