package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// ServerState is where a server's own files outside the workspace carry
// over from one session to the next (--state): put into the container
// before it starts, saved from its upper layer at teardown. The session
// holds only this; the run store's StateDir is the one there is.
type ServerState interface {
	// StateName names the state in problems and records.
	StateName() string
	// Restore gives the state's files as a tar of the container's root
	// (empty: a new state) and makes owner its saver, if none is yet:
	// every session of one run (a scan's replays too) starts from the
	// state as it was when the first one did, and only that first one
	// saves.
	Restore(owner any) ([]byte, error)
	// Save replaces the state with what the upper dir holds outside the
	// places in skip, when owner is its saver (saved false otherwise; an
	// upper of "" is errNoUpper).
	Save(owner any, upper string, skip []string) (info StateInfo, saved bool, err error)
}

// errNoUpper: the container's changes are read through the API, not from
// an upper dir a state could be saved from.
var errNoUpper = errors.New("no upper dir")

// StateDir is a server state (--state NAME): the server's own files
// outside the workspace, saved at the end of one session and put back
// before the next starts, so that a server that stores data finds it.
type StateDir struct {
	Name string
	Dir  string
	// MaxBytes bounds what is saved (default DefaultStateMax): past it
	// nothing is saved, the last state is kept, and a problem says so.
	MaxBytes int64

	// Every session of one run (a scan's replays too) starts from the
	// state as it was when the first one did, and only that first one
	// saves: the state read once, and the session that read it.
	mu     sync.Mutex
	loaded bool
	data   []byte
	owner  any
}

// StateName is the state's name.
func (sd *StateDir) StateName() string { return sd.Name }

// DefaultStateMax bounds a server state's files.
const DefaultStateMax int64 = 256 << 20

// OpenState returns the state named name in the store (made empty when
// new).
func (st RunStore) OpenState(name string) (*StateDir, error) {
	if err := CheckRunName(name); err != nil {
		return nil, err
	}
	d := st.stateDir(name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, fmt.Errorf("making state %s: %w", name, err)
	}
	return &StateDir{Name: name, Dir: d, MaxBytes: DefaultStateMax}, nil
}

// RemoveState removes a state.
func (st RunStore) RemoveState(name string) error {
	if err := CheckRunName(name); err != nil {
		return err
	}
	d := st.stateDir(name)
	if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: state %s", ErrNoRun, name)
	}
	return os.RemoveAll(d)
}

// States lists the saved states' names.
func (st RunStore) States() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(st.Root, "states"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing states: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && CheckRunName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (sd *StateDir) tarPath() string { return filepath.Join(sd.Dir, "files.tar") }

// StateInfo is what a state's last save kept.
type StateInfo struct {
	Saved   time.Time `json:"saved"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
	Skipped []string  `json:"skipped,omitempty"`
}

// Restore: see ServerState.
func (sd *StateDir) Restore(owner any) ([]byte, error) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if !sd.loaded {
		b, err := os.ReadFile(sd.tarPath())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading state %s: %w", sd.Name, err)
		}
		sd.data, sd.loaded, sd.owner = b, true, owner
	}
	return sd.data, nil
}

// restoreState puts the session's state's files into container id before
// it starts.
func (s *Session) restoreState(ctx context.Context, id string) error {
	data, err := s.opts.State.Restore(s)
	if err != nil || len(data) == 0 {
		return err // or a new state
	}
	if err := s.cli.CopyToContainer(ctx, id, "/", bytes.NewReader(data), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("restoring state %s: %w", s.opts.State.StateName(), err)
	}
	return nil
}

// Save: see ServerState.
func (sd *StateDir) Save(owner any, upper string, skip []string) (StateInfo, bool, error) {
	sd.mu.Lock()
	mine := sd.owner == owner
	sd.mu.Unlock()
	if !mine {
		return StateInfo{}, false, nil // a replay's, or a later session's of the same run
	}
	if upper == "" {
		return StateInfo{}, false, errNoUpper
	}
	info, err := sd.save(upper, skip)
	return info, err == nil, err
}

// save writes what the server changed outside the places in skip (the
// workspace, the package, mounts) from the container's upper dir into
// the state, replacing the last save. Deletions of the image's files
// (whiteouts) and special files cannot be kept: they are listed.
func (sd *StateDir) save(upper string, skip []string) (StateInfo, error) {
	max := sd.MaxBytes
	if max <= 0 {
		max = DefaultStateMax
	}
	info := StateInfo{Saved: time.Now().UTC()}
	tmp, err := os.CreateTemp(sd.Dir, "files-*.tar")
	if err != nil {
		return info, fmt.Errorf("saving state %s: %w", sd.Name, err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	tw := tar.NewWriter(tmp)
	err = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(upper, p)
		if err != nil || rel == "." {
			return err
		}
		abs := "/" + filepath.ToSlash(rel)
		for _, s := range skip {
			if abs == s || strings.HasPrefix(abs, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.IsDir(), fi.Mode().IsRegular():
		default:
			esc, _ := overlay.EscapePath(abs)
			info.Skipped = append(info.Skipped, esc) // a whiteout, a device, a fifo, a socket
			return nil
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if fi.Mode().IsRegular() {
			info.Bytes += fi.Size()
			if info.Bytes > max {
				return fmt.Errorf("%w: the server's files outside the workspace pass %d bytes", errStateBound, max)
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		info.Files++
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return info, fmt.Errorf("saving state %s: %w", sd.Name, err)
	}
	if err := os.Rename(tmp.Name(), sd.tarPath()); err != nil {
		return info, fmt.Errorf("saving state %s: %w", sd.Name, err)
	}
	return info, writeJSON(filepath.Join(sd.Dir, "state.json"), info)
}

// errStateBound marks a state over its bound.
var errStateBound = errors.New("over the state bound")

// stateSkip are the places a state never keeps: the host directories'
// targets (the workspace, the package) and the mounts.
func (s *Session) stateSkip() []string {
	// The agent is PID 1 of the next run: a server running as root that
	// replaced it must not have its program there. The engine's files are
	// the engine's.
	skip := []string{s.opts.packageTarget(), overlay.Workspace, agent.Path, "/etc/hosts", "/etc/resolv.conf", "/etc/hostname"}
	for _, m := range s.opts.Mounts {
		skip = append(skip, path.Clean(m.Target))
	}
	// The planted files are the next run's to plant, never the state's.
	for _, f := range s.opts.Seeds {
		skip = append(skip, path.Clean(f.Path))
	}
	out := skip[:0]
	for _, p := range skip {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// saveState saves the server's state at teardown, once the server is
// stopped and before the container goes: a problem says what it could
// not keep.
func (s *Session) saveState() {
	sd := s.opts.State
	if sd == nil {
		return
	}
	upper := ""
	if s.layer != "" {
		upper = filepath.Join(s.layer, "diff")
	}
	name := sd.StateName()
	info, saved, err := sd.Save(s, upper, s.stateSkip())
	switch {
	case errors.Is(err, errNoUpper):
		s.Problem("state", 0, "state %s not saved: the container's changes are read through the API, not from its upper dir", name)
		return
	case err != nil:
		s.Problem("state", 0, "state %s not saved (the last save is kept): %s", name, report.OneLine(err.Error()))
		return
	case !saved:
		return
	}
	if len(info.Skipped) > 0 {
		s.Problem("state", 0, "state %s: %d path(s) not kept (deletions of the image's files, devices, fifos, sockets): %s",
			name, len(info.Skipped), strings.Join(info.Skipped[:min(len(info.Skipped), maxHostEdits)], ", "))
	}
	s.logf("saved state %s: %d file(s), %d byte(s)", name, info.Files, info.Bytes)
}
