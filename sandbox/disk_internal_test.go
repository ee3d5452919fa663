//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDiskMeasure: the measurement counts allocated blocks, not sizes (a
// sparse file costs what it holds), each inode once (hard links), a file
// deleted while this process holds it open (no walk sees it), and does
// not follow a link out of the measured directory. Engine-free: this
// process stands for the container.
func TestDiskMeasure(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	w, err := newDiskWatch(os.Getpid(), 1<<30, time.Hour, []string{dir}, nil, []string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if w.shm >= 0 {
		closeFD(&w.shm) // the host's /dev/shm is shared with everyone: not this test's
	}
	base, _, err := w.measure()
	if err != nil {
		t.Fatal(err)
	}
	grew := func(what string, lo, hi int64) {
		t.Helper()
		n, _, err := w.measure()
		if err != nil {
			t.Fatal(err)
		}
		if d := n - base; d < lo || d > hi {
			t.Fatalf("%s: measured %d bytes over the base, want %d to %d", what, d, lo, hi)
		}
	}
	const mib = 1 << 20
	data := make([]byte, 4*mib)
	for i := range data {
		data[i] = 1
	}
	// Sparse: 64 GiB long, one block held.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{1}, 64<<30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	grew("sparse", 1, 64<<10)
	// 4 MiB with 5 more names.
	p := filepath.Join(dir, "linked")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if err := os.Link(p, p+"."+n); err != nil {
			t.Fatal(err)
		}
	}
	grew("hard links", 4*mib, 4*mib+128<<10)
	// A link to 4 MiB outside: only the link counts.
	if err := os.WriteFile(filepath.Join(outside, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	grew("a link out", 4*mib, 4*mib+128<<10)
	// 4 MiB deleted while held open: still used.
	held, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(held.Name()); err != nil {
		t.Fatal(err)
	}
	grew("deleted, held open", 8*mib, 8*mib+128<<10)
	held.Close()
	grew("deleted, released", 4*mib, 4*mib+128<<10)
}

func closeFD(fd *int) {
	if *fd >= 0 {
		os.NewFile(uintptr(*fd), "").Close()
		*fd = -1
	}
}

// BenchmarkDiskMeasure: one full measurement of an upper dir of n files
// (100 directories), the cost that sets how often the watch measures.
func BenchmarkDiskMeasure(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			for i := 0; i < n; i++ {
				sub := filepath.Join(dir, fmt.Sprint(i%100))
				if i < 100 {
					if err := os.Mkdir(sub, 0o755); err != nil {
						b.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprint(i)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			w, err := newDiskWatch(os.Getpid(), 1<<30, time.Hour, []string{dir}, nil, []string{"/"})
			if err != nil {
				b.Fatal(err)
			}
			defer w.close()
			b.ResetTimer()
			for range b.N {
				if _, _, err := w.measure(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDiskLastMeasurementPastTheDeadline: past the run's deadline the
// teardown makes no last measurement (a walk of a large layer takes
// seconds) and says so; before it, it does. Engine-free: this process
// stands for the container.
func TestDiskLastMeasurementPastTheDeadline(t *testing.T) {
	for _, past := range []bool{false, true} {
		w, err := newDiskWatch(os.Getpid(), 1<<30, time.Hour, []string{t.TempDir()}, nil, []string{"/"})
		if err != nil {
			t.Fatal(err)
		}
		if w.shm >= 0 {
			closeFD(&w.shm)
		}
		s := newSession(nil, SessionOptions{Disk: 1 << 30})
		s.disk = w
		deadline := time.Now().Add(time.Hour)
		if past {
			deadline = time.Now().Add(-time.Second)
		}
		s.finishDisk(deadline)
		said := false
		for _, p := range s.rep.Problems {
			said = said || p.Kind == "disk"
		}
		if polls := w.polls; (polls == 0) != past || said != past {
			t.Errorf("past the deadline %v: %d measurement(s), said %v", past, polls, said)
		}
	}
}
