package runs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

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
func (st Store) OpenState(name string) (*StateDir, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	d := st.stateDir(name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, fmt.Errorf("making state %s: %w", name, err)
	}
	return &StateDir{Name: name, Dir: d, MaxBytes: DefaultStateMax}, nil
}

// RemoveState removes a state.
func (st Store) RemoveState(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	d := st.stateDir(name)
	if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: state %s", ErrNoRun, name)
	}
	return os.RemoveAll(d)
}

// States lists the saved states' names.
func (st Store) States() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(st.Root, "states"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing states: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && CheckName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (sd *StateDir) tarPath() string { return filepath.Join(sd.Dir, "files.tar") }

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

// Save: see ServerState.
func (sd *StateDir) Save(owner any, upper string, skip []string) (sandbox.StateInfo, bool, error) {
	sd.mu.Lock()
	mine := sd.owner == owner
	sd.mu.Unlock()
	if !mine {
		return sandbox.StateInfo{}, false, nil // a replay's, or a later session's of the same run
	}
	if upper == "" {
		return sandbox.StateInfo{}, false, sandbox.ErrNoUpper
	}
	info, err := sd.save(upper, skip)
	return info, err == nil, err
}

// save writes what the server changed outside the places in skip (the
// workspace, the package, mounts) from the container's upper dir into
// the state, replacing the last save. Deletions of the image's files
// (whiteouts) and special files cannot be kept: they are listed.
func (sd *StateDir) save(upper string, skip []string) (sandbox.StateInfo, error) {
	max := sd.MaxBytes
	if max <= 0 {
		max = DefaultStateMax
	}
	info := sandbox.StateInfo{Saved: time.Now().UTC()}
	// Written beside files.tar and renamed over it once synced: a crash
	// leaves the last save, never half of this one.
	tmp, err := renameio.NewPendingFile(sd.tarPath(), renameio.WithTempDir(sd.Dir), renameio.WithStaticPermissions(0o600))
	if err != nil {
		return info, fmt.Errorf("saving state %s: %w", sd.Name, err)
	}
	defer tmp.Cleanup() // nothing once replaced
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
		err = tmp.CloseAtomicallyReplace()
	}
	if err != nil {
		return info, fmt.Errorf("saving state %s: %w", sd.Name, err)
	}
	return info, writeJSON(filepath.Join(sd.Dir, "state.json"), info)
}

// errStateBound marks a state over its bound.
var errStateBound = errors.New("over the state bound")
