//go:build linux

package sandbox

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

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
	if err := readSysv(&snap, lim.WithDefaults(), budget); err != nil {
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

		if s := sysvSnap(t, overlay.Limits{MaxEntries: 2}, sysvHashBudget); !s.Truncated || len(s.Entries) != 2 {
			t.Errorf("entry bound: truncated %v, %d entries", s.Truncated, len(s.Entries))
		}
		if s := sysvSnap(t, overlay.Limits{}, 4096); !s.Truncated || s.Entries[paths[0]].SHA256 != "" {
			t.Errorf("byte budget: truncated %v, segment %+v; want no hash, truncated", s.Truncated, s.Entries[paths[0]])
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
