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
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestStateAcrossScans: a server's data outside the workspace (its home
// directory) is there again in the next scan with the same --state, as
// the starting state (not an effect), and not in a scan without it.
func TestStateAcrossScans(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	store := runs.Store{Root: t.TempDir()}
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
	store := runs.Store{Root: t.TempDir()}
	meta := runs.Meta{Name: "edit", Command: []string{"fixture"}, Workspace: host, Upper: upper, Container: s.Kept(), Created: time.Now(), State: runs.Stopped}
	if err := store.Create(meta, &base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Remove(context.WithoutCancel(ctx), cli, "edit") })
	if removed, err := sandbox.Reap(ctx, cli); err != nil || slices.Contains(removed, s.Kept()) {
		t.Errorf("the reaper removed the kept run: %v %v", removed, err)
	}
	if m, err := store.Refresh(ctx, cli, meta); err != nil || m.State != runs.Stopped {
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
	res, err := overlay.Apply(context.Background(), o)
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
