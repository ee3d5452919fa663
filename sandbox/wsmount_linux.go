//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// A host directory is given to the server copy-on-write, with nothing
// copied: an overlayfs whose lower layer is an idmapped, read-only,
// detached clone of the directory (the directory's owner is seen as the
// sandbox user, so the server can write as it could in a copy), whose
// upper and work dirs live in the container's own layer directory (gone
// with the container), built with the new mount API and moved into the
// container's mount namespace after it starts and before the server does.
// Layers are given to overlayfs by descriptor, so the mount's options name
// no host path. See docs/effects.md "The workspace" for the choice and its costs.

// ErrMountUnsupported marks a kernel, engine or filesystem that cannot
// mount the workspace; the copy into an image layer is the fallback.
var ErrMountUnsupported = errors.New("the workspace cannot be mounted here")

// overlayMount is one host directory mounted copy-on-write in a container.
type overlayMount struct {
	host   string // the host directory, only ever read
	target string // where the server sees it, e.g. /workspace
	state  string // <container layer dir>/<name>: upper, work, seed
	// lower is the idmapped read-only clone's root, kept open so that the
	// classifier reads the host files as the overlay sees them (owner
	// mapped, no atime written) through /proc/self/fd/N.
	lower int
	mnt   int // the detached overlay, until attached
}

// newOverlayMount builds the detached overlay for host at target. layerDir
// is the container's overlay2 layer directory (the parent of its upper
// dir), name our directory in it; seeds under target go into a layer of
// their own, above the host's, so that they are part of the starting
// state, not effects.
func newOverlayMount(host, target, layerDir, name string, seeds []probes.SeedFile) (_ *overlayMount, err error) {
	m := &overlayMount{host: host, target: target, state: filepath.Join(layerDir, name), lower: -1, mnt: -1}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	var st unix.Stat_t
	if err := unix.Stat(host, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", host, err)
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, host, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, unsupported("open_tree", err)
	}
	defer unix.Close(tree)
	userns, err := usernsFD(int(st.Uid), int(st.Gid), images.UID, images.GID)
	if err != nil {
		return nil, unsupported("a user namespace for the id mapping", err)
	}
	defer unix.Close(userns)
	// Read-only: nothing, not even an atime, is written through it.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(userns)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return nil, unsupported("an idmapped mount of the workspace", err)
	}
	// fsconfig(FSCONFIG_SET_FD) refuses open_tree's O_PATH descriptor.
	if m.lower, err = unix.Openat(tree, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("opening the workspace clone: %w", err)
	}
	if err := m.makeState(st.Mode&0o7777, seeds); err != nil {
		return nil, err
	}
	stree, err := unix.OpenTree(unix.AT_FDCWD, m.state, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, unsupported("open_tree of the state dir", err)
	}
	defer unix.Close(stree)
	fds := map[string]int{}
	for _, d := range []string{"seed", "upper", "work"} {
		fd, err := unix.Openat(stree, d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", d, err)
		}
		defer unix.Close(fd)
		fds[d] = fd
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, unsupported("fsopen(overlay)", err)
	}
	defer unix.Close(fs)
	steps := []struct {
		key string
		fd  int
	}{{"lowerdir+", fds["seed"]}, {"lowerdir+", m.lower}, {"upperdir", fds["upper"]}, {"workdir", fds["work"]}}
	if err := unix.FsconfigSetString(fs, "source", "overlay"); err != nil {
		return nil, unsupported("fsconfig source", fsLog(fs, err))
	}
	for _, s := range steps {
		if err := unix.FsconfigSetFd(fs, s.key, s.fd); err != nil {
			return nil, unsupported("overlay layers by descriptor ("+s.key+")", fsLog(fs, err))
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, unsupported("the overlay", fsLog(fs, err))
	}
	if m.mnt, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
		return nil, unsupported("fsmount", fsLog(fs, err))
	}
	return m, nil
}

func unsupported(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrMountUnsupported, what, err)
}

// fsLog adds the filesystem context's log (what dmesg would say) to err.
func fsLog(fs int, err error) error {
	buf := make([]byte, 4096)
	var msgs []string
	for {
		n, rerr := unix.Read(fs, buf)
		if rerr != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	if len(msgs) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(msgs, "; "))
}

// makeState makes upper, work and the seed layer. The upper's root takes
// the host root's mode and the sandbox user: it is the merged root's.
func (m *overlayMount) makeState(mode uint32, seeds []probes.SeedFile) error {
	for _, d := range []string{"", "seed", "upper", "work"} {
		if err := os.Mkdir(filepath.Join(m.state, d), 0o700); err != nil {
			return fmt.Errorf("making the workspace state dir: %w", err)
		}
	}
	upper := filepath.Join(m.state, "upper")
	if err := os.Chown(upper, images.UID, images.GID); err != nil {
		return fmt.Errorf("making the workspace state dir: %w", err)
	}
	if err := os.Chmod(upper, os.FileMode(mode)); err != nil {
		return fmt.Errorf("making the workspace state dir: %w", err)
	}
	seed := filepath.Join(m.state, "seed")
	if err := os.Chmod(seed, 0o755); err != nil {
		return fmt.Errorf("making the seed layer: %w", err)
	}
	var written []probes.SeedFile
	for _, f := range seeds {
		rel, ok := strings.CutPrefix(f.Path, m.target+"/")
		if !ok {
			continue
		}
		if _, err := os.Lstat(filepath.Join(m.host, rel)); err == nil {
			continue // the server sees the user's file, not ours
		}
		if err := writeSeed(seed, rel, f); err != nil {
			return fmt.Errorf("making the seed layer: %w", err)
		}
		written = append(written, f)
	}
	// Times last, files and directories alike (writing a file changes its
	// directory's); the seed layer's root is the workspace's, not ours.
	for p, t := range seedTimes(written, time.Now()) {
		rel, ok := strings.CutPrefix(p, m.target+"/")
		if !ok {
			continue
		}
		if err := os.Chtimes(filepath.Join(seed, rel), t, t); err != nil {
			return fmt.Errorf("making the seed layer: %w", err)
		}
	}
	return nil
}

// writeSeed writes one seed below root, owned by the sandbox user, making
// its directories; every path is ours, made here, never a host path.
func writeSeed(root, rel string, f probes.SeedFile) error {
	dir := root
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Lchown(dir, images.UID, images.GID); err != nil {
			return err
		}
	}
	p := filepath.Join(root, rel)
	if err := os.WriteFile(p, []byte(f.Content), os.FileMode(f.Mode)); err != nil {
		return err
	}
	if err := os.Chmod(p, os.FileMode(f.Mode)); err != nil {
		return err
	}
	return os.Lchown(p, images.UID, images.GID)
}

// attach moves the overlay onto the target inside the mount namespace of
// pid (the container's PID 1, which waits for the runner before starting
// the server), then lets go of it: from then on the mount lives and dies
// with that namespace.
func (m *overlayMount) attach(pid int) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("opening the container's init (pid %d): %w", pid, err)
	}
	defer unix.Close(pidfd)
	errc := make(chan error, 1)
	go func() { errc <- m.attachFromThread(pidfd) }()
	err = <-errc
	// An open descriptor of the mount keeps the overlay busy after the
	// container has gone: close it now, attached or not.
	unix.Close(m.mnt)
	m.mnt = -1
	return err
}

// attachFromThread does the setns on a thread of its own. setns into a
// mount namespace needs an fs_struct not shared with other threads
// (unshare(CLONE_FS)). Afterwards the thread goes back to our namespace
// and directory, so that no thread of ours can stay in the container's
// namespace (which would pin it, and the overlay, after the container),
// and then exits with the goroutine, unless it is the main thread, which
// the runtime never ends.
func (m *overlayMount) attachFromThread(pidfd int) error {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening our mount namespace: %w", err)
	}
	defer unix.Close(self)
	cwd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening our directory: %w", err)
	}
	defer unix.Close(cwd)
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return unsupported("unshare(CLONE_FS)", err)
	}
	if err := unix.Setns(pidfd, unix.CLONE_NEWNS); err != nil {
		return unsupported("entering the container's mount namespace", err)
	}
	moveErr := m.moveMount()
	back := unix.Setns(self, unix.CLONE_NEWNS)
	if back == nil {
		back = unix.Fchdir(cwd)
	}
	if back != nil {
		// This thread must never run anything else: left locked, it exits
		// with the goroutine (or, the main thread, stays parked).
		return errors.Join(moveErr, fmt.Errorf("returning from the container's mount namespace: %w", back))
	}
	if unix.Gettid() == unix.Getpid() {
		runtime.UnlockOSThread() // the main thread, back home
	}
	return moveErr
}

func (m *overlayMount) moveMount() error {
	// / is the container's root now: resolve the target inside it,
	// following no link.
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	t, err := unix.Openat2(unix.AT_FDCWD, m.target, &how)
	if err != nil {
		return fmt.Errorf("opening %s in the container: %w", m.target, err)
	}
	defer unix.Close(t)
	if err := unix.MoveMount(m.mnt, "", t, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return unsupported("moving the workspace into the container", err)
	}
	return nil
}

// upperDir is where the server's changes to the mount land.
func (m *overlayMount) upperDir() string { return filepath.Join(m.state, "upper") }

// lowers are the layers below, top first, as the classifier reads them.
func (m *overlayMount) lowers() []string {
	return []string{filepath.Join(m.state, "seed"), fmt.Sprintf("/proc/self/fd/%d", m.lower)}
}

// close lets go of every descriptor; the directories go with the container.
func (m *overlayMount) close() {
	for _, fd := range []*int{&m.mnt, &m.lower} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// usernsHoldEnv marks the helper process that holds a user namespace for
// an idmapped mount: a process must own the namespace while its fd is
// opened, and a multi-threaded process cannot unshare one itself.
const usernsHoldEnv = "MCPSANDBOX_USERNS_HOLD"

// A binary that imports this package and is started with usernsHoldEnv
// is that helper: it waits for its stdin to close and exits, before main.
func init() {
	if os.Getenv(usernsHoldEnv) == "1" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
}

// usernsFD returns a user namespace in which disk ids uid/gid are seen as
// seenUID/seenGID and the two are swapped, every other id mapped to
// itself: files of other owners keep their owner (readable, deletable
// where the directory allows, not writable) rather than turning into
// nobody.
func usernsFD(uid, gid, seenUID, seenGID int) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return -1, err
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{usernsHoldEnv + "=1"}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer r.Close()
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: swapMap(uid, seenUID), GidMappings: swapMap(gid, seenGID), Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil { // the maps are written when Start returns
		w.Close()
		return -1, err
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	w.Close()
	return fd, errors.Join(err, cmd.Wait())
}

// swapMap maps disk to seen and seen to disk, every other id to itself.
func swapMap(disk, seen int) []syscall.SysProcIDMap {
	if disk == seen {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	lo, hi := min(disk, seen), max(disk, seen)
	const end = 1<<32 - 1 // ids 0 .. 2^32-2
	var out []syscall.SysProcIDMap
	add := func(from, to, n int) {
		if n > 0 {
			out = append(out, syscall.SysProcIDMap{ContainerID: from, HostID: to, Size: n})
		}
	}
	add(0, 0, lo)
	add(lo, hi, 1)
	add(lo+1, lo+1, hi-lo-1)
	add(hi, lo, 1)
	add(hi+1, hi+1, end-hi-1)
	return out
}
