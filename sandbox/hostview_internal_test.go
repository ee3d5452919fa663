//go:build linux

package sandbox

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// inFreshIPCNamespace runs fn on a thread of its own in a new IPC
// namespace; the thread ends with it.
func inFreshIPCNamespace(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a new IPC namespace needs root")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWIPC); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		fn()
	}()
	<-done
}

func sysvSnap(t *testing.T, lim overlay.Limits, budget int64) overlay.Snapshot {
	t.Helper()
	snap := overlay.Snapshot{Entries: map[string]overlay.Entry{}}
	if err := readSysv(&snap, lim.WithDefaults(), budget, time.Time{}); err != nil {
		t.Errorf("readSysv: %v", err)
	}
	return snap
}

// TestSysvObjectsByContent: each kind of System V object is listed with a
// hash of its content, which changes when the content does, and nothing
// the listing does changes it; the entry and byte bounds are kept and say
// so.
func TestSysvObjectsByContent(t *testing.T) {
	inFreshIPCNamespace(t, func() {
		shm, err := unix.SysvShmGet(unix.IPC_PRIVATE, 8192, unix.IPC_CREAT|0o600)
		if err != nil {
			t.Errorf("shmget: %v", err)
			return
		}
		msq, _, _ := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o640, 0)
		sem, _, _ := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 2, unix.IPC_CREAT|0o600)
		s1 := sysvSnap(t, overlay.Limits{}, sysvHashBudget)
		paths := []string{"/proc/sysvipc/shm/0", "/proc/sysvipc/msg/0", "/proc/sysvipc/sem/0"}
		for _, p := range paths {
			if e, ok := s1.Entries[p]; !ok || e.SHA256 == "" {
				t.Errorf("%s: %+v (present %v), want an entry with a hash", p, e, ok)
			}
		}
		if e := s1.Entries[paths[0]]; e.Type != overlay.File || e.Size != 8192 || e.Mode != 0o600 {
			t.Errorf("segment entry = %+v", e)
		}
		if e := s1.Entries[paths[1]]; e.Type != overlay.Other || e.Mode != 0o640 {
			t.Errorf("queue entry = %+v", e)
		}
		if s := sysvSnap(t, overlay.Limits{}, sysvHashBudget); !sameEntries(s1, s) {
			t.Error("listing the objects changed them")
		}

		b, err := unix.SysvShmAttach(shm, 0, 0)
		if err != nil {
			t.Errorf("shmat: %v", err)
			return
		}
		copy(b, "written")
		unix.SysvShmDetach(b)
		msg := append([]byte{1, 0, 0, 0, 0, 0, 0, 0}, "hello"...)
		unix.Syscall6(unix.SYS_MSGSND, msq, uintptr(unsafe.Pointer(&msg[0])), 5, 0, 0, 0)
		unix.Syscall6(unix.SYS_SEMCTL, sem, 1, 16 /* SETVAL */, 3, 0, 0)
		s2 := sysvSnap(t, overlay.Limits{}, sysvHashBudget)
		for _, p := range paths {
			if s1.Entries[p].SHA256 == s2.Entries[p].SHA256 {
				t.Errorf("%s: the hash did not change with the content", p)
			}
		}
		// A message read by index stays queued.
		if s3 := sysvSnap(t, overlay.Limits{}, sysvHashBudget); s3.Entries[paths[1]].SHA256 != s2.Entries[paths[1]].SHA256 {
			t.Error("reading the queue changed it")
		}
		// Past the run's deadline nothing is read: every object with
		// content is listed unhashed, none left out.
		late := overlay.Snapshot{Entries: map[string]overlay.Entry{}}
		if err := readSysv(&late, overlay.Limits{}.WithDefaults(), sysvHashBudget, time.Now().Add(-time.Second)); err != nil {
			t.Errorf("readSysv: %v", err)
		}
		if late.Truncated || len(late.Unhashed) != 3 {
			t.Errorf("past the deadline: truncated %v, unhashed %q; want the 3 objects", late.Truncated, late.Unhashed)
		}
		for _, p := range paths {
			if e, ok := late.Entries[p]; !ok || !e.Unhashed || e.SHA256 != "" {
				t.Errorf("past the deadline, %s: %+v (present %v)", p, e, ok)
			}
		}

		// Past a bound, what was not entered is not reached (neither gone
		// nor new); what the tables show absent is.
		s := sysvSnap(t, overlay.Limits{MaxEntries: 2}, sysvHashBudget)
		if !s.Truncated || len(s.Entries) != 2 || !s.Reached(paths[1]) || s.Reached(paths[2]) || !s.Reached("/proc/sysvipc/sem/99") {
			t.Errorf("entry bound: truncated %v, %d entries, reached msg %v sem %v absent sem %v", s.Truncated, len(s.Entries),
				s.Reached(paths[1]), s.Reached(paths[2]), s.Reached("/proc/sysvipc/sem/99"))
		}
		s = sysvSnap(t, overlay.Limits{}, 4096)
		if _, ok := s.Entries[paths[0]]; !s.Truncated || ok || s.Reached(paths[0]) || !s.Reached(paths[1]) {
			t.Errorf("byte budget: truncated %v, segment listed %v, reached %v; want it left out, unreached", s.Truncated, ok, s.Reached(paths[0]))
		}
	})
}

func sameEntries(a, b overlay.Snapshot) bool {
	if len(a.Entries) != len(b.Entries) {
		return false
	}
	for p, e := range a.Entries {
		if b.Entries[p] != e {
			return false
		}
	}
	return true
}

// rootSource is a container's layers as a snapshot, for hostSource.
type rootSource struct{ snap overlay.Snapshot }

func (r rootSource) Snapshot(context.Context, overlay.SnapshotOptions) (overlay.Snapshot, error) {
	s := r.snap
	s.Entries = maps.Clone(r.snap.Entries) // a fresh map each time, as the real sources give
	return s, nil
}
func (r rootSource) Close(context.Context) error { return nil }

// TestAFloodInTheLayersDoesNotBlindTheView: the container's layers hit
// their bound (a flood in /tmp, reaching nothing else); /dev/shm, read by
// the view, is still compared in full.
func TestAFloodInTheLayersDoesNotBlindTheView(t *testing.T) {
	dir := t.TempDir()
	flood := overlay.Snapshot{Entries: map[string]overlay.Entry{}, Truncated: true,
		Covers: func(p string) bool { return strings.HasPrefix(p, "/tmp/") }}
	hs := &hostSource{changeSource: rootSource{flood}, view: &hostView{ipc: -1,
		trees: []*overlay.Tree{{Root: dir, At: overlay.ShmDir}}}}
	prev, err := hs.Snapshot(context.Background(), overlay.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "x"), []byte("kept"), 0o600)
	cur, err := hs.Snapshot(context.Background(), overlay.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := overlay.Delta(prev, cur)
	if len(d) != 1 || d[0].Path != "/dev/shm/x" || d[0].Change != report.ChangeCreated {
		t.Errorf("delta past a flood in the layers = %+v, want /dev/shm/x created", d)
	}
	if cur.Reached("/workspace/a") || !cur.Reached("/tmp/a") {
		t.Error("the layers' own coverage is kept")
	}
}
