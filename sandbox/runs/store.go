package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/google/renameio/v2"

	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/internal/enum"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Named runs and server states live under the user's state directory
// ($XDG_STATE_HOME/mcpsandbox, else ~/.local/state/mcpsandbox):
//
//	runs/NAME/run.json        the run's metadata (Meta)
//	runs/NAME/baseline.json   the workspace's identity when it started
//	states/NAME/files.tar     a server's own files outside the workspace
//	states/NAME/state.json    what was saved, when
//
// A kept run's container is stopped, never left running, and carries
// label.Keep: neither the orphan reaper nor cache eviction removes it (or
// the images it uses); `mcpsandbox clean NAME` removes it with its
// directory. It carries its runner's label.Owner too: should the runner
// die with the server running, the reaper stops it (ReapAll). Its workspace changes stay in the container's layer
// directory (the mount's upper dir) until then.

// StateRoot is the user's state directory for mcpsandbox.
func StateRoot() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpsandbox"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpsandbox"), nil
}

// runNameRE is what a run or state name may be: it is a directory name.
var runNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ErrName marks a name that cannot be a run's or a state's.
var ErrName = errors.New("bad name")

// ErrNoRun marks a run name the store does not have.
var ErrNoRun = errors.New("no such run")

// ErrExists marks a name taken already.
var ErrExists = errors.New("a run of that name exists")

// CheckName says whether name can name a run or a state.
func CheckName(name string) error {
	if !runNameRE.MatchString(name) {
		return fmt.Errorf("%w %q: letters, digits, '.', '_' and '-', at most 100, not starting with a punctuation mark", ErrName, name)
	}
	return nil
}

// DefaultName names a run from its start and its command:
// 20261201-095200-server (the command's base name, made safe).
func DefaultName(start time.Time, argv []string) string {
	cmd := "server"
	for _, a := range argv {
		// The package or script, not the interpreter or npx.
		b := path.Base(strings.ReplaceAll(a, "\\", "/"))
		if b == "" || strings.HasPrefix(a, "-") || b == "npx" || b == "node" || b == "python" || b == "python3" || b == "uvx" {
			continue
		}
		cmd = b
		break
	}
	cmd = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, cmd)
	cmd = strings.Trim(cmd, ".-_")
	if cmd == "" {
		cmd = "server"
	}
	return (start.UTC().Format("20060102-150405") + "-" + cmd)[:min(100, 16+len(cmd))]
}

// State is where a named run is.
type State int

const (
	// Running: its runner is serving it.
	Running State = iota + 1
	// Stopped: it ended; its container is kept, stopped.
	Stopped
	// Gone: its container is no longer there (removed outside
	// mcpsandbox): its changes are lost.
	Gone
)

var runStateNames = []string{Running: "running", Stopped: "stopped", Gone: "gone"}

func (r State) String() string { return enum.Name(runStateNames, int(r)) }

// MarshalText keeps the JSON a name.
func (r State) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a name.
func (r *State) UnmarshalText(b []byte) error {
	v, err := enum.Parse(runStateNames, "run state", string(b))
	*r = State(v)
	return err
}

// Meta is a named run's record.
type Meta struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Image   string   `json:"image"`
	// Workspace is the host directory the run saw at /workspace ("":
	// none); Upper is where its changes are (the mount's upper dir, in
	// the container's layer directory).
	Workspace string `json:"workspace,omitempty"`
	Upper     string `json:"upper,omitempty"`
	// Container is the kept container's id.
	Container string    `json:"container,omitempty"`
	Created   time.Time `json:"created"`
	State     State     `json:"state"`
	// StateName is the server state (--state) the run used.
	StateName string `json:"stateName,omitempty"`
	// Planted are the paths the runner put in the workspace (relative to
	// it): never applied.
	Planted []string `json:"planted,omitempty"`
	// Owner is the runner's label.Owner value while it runs (a record
	// whose runner died before it had a container is gone).
	Owner string `json:"owner,omitempty"`
}

// Store keeps named runs in a directory.
type Store struct {
	Root string // the state root (StateRoot)
}

// DefaultStore is the store under the user's state directory.
func DefaultStore() (Store, error) {
	root, err := StateRoot()
	return Store{Root: root}, err
}

func (st Store) runDir(name string) string   { return filepath.Join(st.Root, "runs", name) }
func (st Store) stateDir(name string) string { return filepath.Join(st.Root, "states", name) }

// Create records a new run with its workspace baseline; a name taken
// already is refused.
func (st Store) Create(meta Meta, baseline *overlay.Baseline) error {
	if err := CheckName(meta.Name); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(st.Root, "runs"), 0o700); err != nil {
		return fmt.Errorf("making the run store: %w", err)
	}
	dir := st.runDir(meta.Name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if old, gerr := st.Get(meta.Name); gerr == nil && runnerDied(old) {
				// Not taken over: two runners doing so at once could
				// each remove the other's new record.
				return fmt.Errorf("%w: %s (its runner died before its container was made; 'mcpsandbox clean %s' frees the name)", ErrExists, meta.Name, meta.Name)
			}
			return fmt.Errorf("%w: %s", ErrExists, meta.Name)
		}
		return fmt.Errorf("making the run's directory: %w", err)
	}
	if baseline != nil {
		if err := writeJSON(filepath.Join(dir, "baseline.json"), baseline); err != nil {
			return err
		}
	}
	return st.Update(meta)
}

// Update writes the run's metadata again.
func (st Store) Update(meta Meta) error {
	if err := CheckName(meta.Name); err != nil {
		return err
	}
	return writeJSON(filepath.Join(st.runDir(meta.Name), "run.json"), meta)
}

// Get reads a run's metadata.
func (st Store) Get(name string) (Meta, error) {
	if err := CheckName(name); err != nil {
		return Meta{}, err
	}
	var m Meta
	b, err := os.ReadFile(filepath.Join(st.runDir(name), "run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, fmt.Errorf("%w: %s", ErrNoRun, name)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("reading run %s: %w", name, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("reading run %s: %w", name, err)
	}
	return m, nil
}

// Baseline reads a run's workspace baseline.
func (st Store) Baseline(name string) (overlay.Baseline, error) {
	var b overlay.Baseline
	raw, err := os.ReadFile(filepath.Join(st.runDir(name), "baseline.json"))
	if err != nil {
		return b, fmt.Errorf("reading the baseline of run %s: %w", name, err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, fmt.Errorf("reading the baseline of run %s: %w", name, err)
	}
	return b, nil
}

// SaveBaseline writes a run's baseline again (after an apply).
func (st Store) SaveBaseline(name string, b overlay.Baseline) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return writeJSON(filepath.Join(st.runDir(name), "baseline.json"), b)
}

// List reads every run, oldest first (ties by name).
func (st Store) List() ([]Meta, error) {
	ents, err := os.ReadDir(filepath.Join(st.Root, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var out []Meta
	for _, e := range ents {
		if !e.IsDir() || CheckName(e.Name()) != nil {
			continue
		}
		m, err := st.Get(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// runnerDied says whether m is a record of a run still starting whose
// runner is dead (killed before its container was made, or before it
// said which): no container will ever be recorded.
func runnerDied(m Meta) bool {
	return m.State == Running && m.Container == "" && m.Owner != "" && !label.OwnerAlive(m.Owner)
}

// Engine is the part of the Engine API named runs use.
type Engine interface {
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
}

// Refresh sets the run's state from its container: gone when it is not
// there, stopped when it no longer runs.
func (st Store) Refresh(ctx context.Context, cli Engine, m Meta) (Meta, error) {
	if m.Container == "" {
		if runnerDied(m) {
			m.State = Gone
		}
		return m, nil
	}
	in, err := cli.ContainerInspect(ctx, m.Container)
	switch {
	case cerrdefs.IsNotFound(err):
		m.State = Gone
	case err != nil:
		return m, fmt.Errorf("inspecting the container of run %s: %w", m.Name, err)
	case in.State != nil && in.State.Running:
		m.State = Running
	default:
		m.State = Stopped
	}
	return m, nil
}

// Remove removes a run: its container (force, were it running) and its
// directory.
func (st Store) Remove(ctx context.Context, cli Engine, name string) error {
	m, err := st.Get(name)
	if err != nil {
		return err
	}
	if m.Container != "" {
		if err := sandbox.RemoveContainer(ctx, cli, m.Container); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(st.runDir(name)); err != nil {
		return fmt.Errorf("removing run %s: %w", name, err)
	}
	return nil
}

// Forget drops name's record where its run made no container (the image
// is missing, the engine refused it): nothing is kept, the name is free.
func (st Store) Forget(name string) error {
	if err := os.RemoveAll(st.runDir(name)); err != nil {
		return fmt.Errorf("forgetting run %s: %w", name, err)
	}
	return nil
}

// Containers are the ids of the runs' containers (for clean to leave).
func (st Store) Containers() (map[string]bool, error) {
	runs, err := st.List()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range runs {
		if r.Container != "" {
			out[r.Container] = true
		}
	}
	return out, nil
}

// ApplyOptions are what overlay.Changes and overlay.Apply need of a run,
// its upper dir found again from its container (the layer directory may
// move only with the container).
func (st Store) ApplyOptions(ctx context.Context, cli Engine, name string) (overlay.ApplyOptions, error) {
	m, err := st.Get(name)
	if err != nil {
		return overlay.ApplyOptions{}, err
	}
	if m.Workspace == "" || m.Upper == "" {
		return overlay.ApplyOptions{}, fmt.Errorf("run %s had no host workspace mounted: it has no changes to apply", name)
	}
	if m, err = st.Refresh(ctx, cli, m); err != nil {
		return overlay.ApplyOptions{}, err
	}
	switch m.State {
	case Gone:
		return overlay.ApplyOptions{}, fmt.Errorf("the container of run %s is gone, and its changes with it", name)
	case Running:
		return overlay.ApplyOptions{}, fmt.Errorf("run %s is still running: its changes are read once it stopped", name)
	}
	b, err := st.Baseline(name)
	if err != nil {
		return overlay.ApplyOptions{}, err
	}
	return overlay.ApplyOptions{Host: m.Workspace, Upper: m.Upper, Baseline: b, Planted: m.Planted}, nil
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", p, err)
	}
	// A temporary file of its own (two processes may write one run's
	// record), synced before the rename: a reader, or the record after a
	// crash, is the old one or the new, never half of one.
	if err := renameio.WriteFile(p, append(b, '\n'), 0o600, renameio.WithTempDir(filepath.Dir(p)), renameio.WithStaticPermissions(0o600)); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}
