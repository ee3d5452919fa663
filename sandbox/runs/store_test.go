package runs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestRunStore(t *testing.T) {
	st := runs.Store{Root: t.TempDir()}
	if list, err := st.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	t0 := time.Date(2026, 12, 1, 9, 52, 0, 0, time.UTC)
	b := overlay.Baseline{Files: map[string]overlay.FileID{"a.txt": {Type: overlay.File, Size: 3}}}
	for i, name := range []string{"second", "first"} {
		m := runs.Meta{Name: name, Command: []string{"npx", "srv"}, Created: t0.Add(time.Duration(-i) * time.Minute), State: runs.Stopped}
		if err := st.Create(m, &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(runs.Meta{Name: "first"}, nil); !errors.Is(err, runs.ErrExists) {
		t.Errorf("a second run named first: %v", err)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 101)} {
		if err := st.Create(runs.Meta{Name: bad}, nil); !errors.Is(err, runs.ErrName) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	list, err := st.List()
	if err != nil || len(list) != 2 || list[0].Name != "first" || list[1].State != runs.Stopped {
		t.Fatalf("list: %+v %v", list, err)
	}
	if got, err := st.Baseline("first"); err != nil || got.Files["a.txt"].Size != 3 {
		t.Errorf("baseline: %+v %v", got, err)
	}
	if err := st.Remove(context.Background(), nil, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("first"); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("removed run: %v", err)
	}
}

func TestStateRoot(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if r, _ := runs.StateRoot(); r != "/x/state/mcpsandbox" {
		t.Errorf("with XDG_STATE_HOME: %s", r)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if r, _ := runs.StateRoot(); r != "/home/u/.local/state/mcpsandbox" {
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
		got := runs.DefaultName(at, strings.Fields(argv))
		if got != want || runs.CheckName(got) != nil {
			t.Errorf("DefaultRunName(%q) = %q, want %q", argv, got, want)
		}
	}
}

// TestNamedRunLifecycle: a named run is recorded before anything starts
// (a name taken is refused then), with its workspace's baseline, running;
// kept, it is stopped with its container; one that kept no container is
// forgotten, as is one whose scan never kept any (Forget), and Forget
// after Kept leaves the record.
func TestNamedRunLifecycle(t *testing.T) {
	st := runs.Store{Root: t.TempDir()}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so := sandbox.SessionOptions{Argv: []string{"srv"}, Image: "img", Workspace: ws}
	n, err := runs.Begin(st, "kept", so)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Begin(st, "kept", so); !errors.Is(err, runs.ErrExists) {
		t.Errorf("the name twice: %v", err)
	}
	if m, err := st.Get("kept"); err != nil || m.State != runs.Running || m.Workspace != ws {
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
	if m, err := st.Get("kept"); err != nil || m.State != runs.Stopped || m.Container != "c0ffee" {
		t.Errorf("kept then forgotten: %+v %v", m, err)
	}
	for name, end := range map[string]func(*runs.Named) error{
		"nothing-kept": func(n *runs.Named) error {
			msg, err := n.Kept(sandbox.KeptSession{})
			return errors.Join(err, isEmpty(msg))
		},
		"never-started": (*runs.Named).Forget,
	} {
		n, err := runs.Begin(st, name, sandbox.SessionOptions{Argv: []string{"srv"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := end(n); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := st.Get(name); err == nil {
			t.Errorf("%s: still recorded", name)
		}
		if _, err := runs.Begin(st, name, sandbox.SessionOptions{}); err != nil {
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
	st := runs.Store{Root: t.TempDir()}
	ctx := context.Background()
	n, err := runs.Begin(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}})
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
	if r, err := st.Refresh(ctx, nil, m); err != nil || r.State != runs.Running {
		t.Errorf("refresh while its runner lives: %v, %v; want running", r.State, err)
	}

	m.Owner = sandboxtest.DeadOwner(t) // the runner was killed before Started
	if err := st.Update(m); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Refresh(ctx, nil, m); err != nil || r.State != runs.Gone {
		t.Errorf("refresh once its runner died: %v, %v; want gone", r.State, err)
	}
	_, err = runs.Begin(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}})
	if !errors.Is(err, runs.ErrExists) || !strings.Contains(err.Error(), "mcpsandbox clean srv") {
		t.Errorf("a new run of the dead one's name: %v, want refused with the way to free it", err)
	}
	if err := st.Remove(ctx, nil, "srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Begin(st, "srv", sandbox.SessionOptions{Image: "img", Argv: []string{"srv"}}); err != nil {
		t.Errorf("once removed: %v", err)
	}
}
