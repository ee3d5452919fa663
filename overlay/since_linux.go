//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// ChangedSince walks root (never following a link, never touching an
// atime) and returns the paths whose ctime is at or after since (ns),
// sorted, at most max of them, with how many there were. ctime cannot be
// set by a user: a file written, renamed, chmod'ed or a directory whose
// entries changed all show. Directories are read by a few workers, so
// the walk costs a fraction of a single-threaded one on a cold cache.
func ChangedSince(root string, since int64, max int) (paths []string, count int, err error) {
	const workers = 4
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOATIME, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("opening %s: %w", root, err)
	}
	type dir struct {
		fd  int
		rel string
	}
	var (
		mu      sync.Mutex
		errs    []error
		pending sync.WaitGroup
		found   = func(rel string) {
			mu.Lock()
			count++
			if len(paths) < max {
				paths = append(paths, rel)
			}
			mu.Unlock()
		}
	)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Ctim.Nano() >= since {
		found("/")
	}
	jobs := make(chan dir)
	// queue hands a directory to a worker without ever blocking the
	// worker that found it (which would deadlock a full pool).
	var queue func(d dir)
	queue = func(d dir) {
		pending.Add(1)
		go func() { jobs <- d }()
	}
	visit := func(d dir) {
		defer pending.Done()
		f := os.NewFile(uintptr(d.fd), d.rel)
		defer f.Close()
		for {
			ents, rerr := f.ReadDir(1024)
			for _, e := range ents {
				var st unix.Stat_t
				if err := unix.Fstatat(d.fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // gone since listed: its directory's ctime tells
				}
				rel := d.rel + "/" + e.Name()
				if st.Ctim.Nano() >= since {
					found(rel)
				}
				if st.Mode&unix.S_IFMT == unix.S_IFDIR {
					c, err := unix.Openat(d.fd, e.Name(), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOATIME, 0)
					if err == nil {
						queue(dir{c, rel})
					}
				}
			}
			if rerr != nil {
				if !errors.Is(rerr, io.EOF) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("listing %s: %w", orRoot(d.rel), rerr))
					mu.Unlock()
				}
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range jobs {
				visit(d)
			}
		}()
	}
	queue(dir{fd, ""})
	pending.Wait()
	close(jobs)
	wg.Wait()
	sort.Strings(paths)
	return paths, count, errors.Join(errs...)
}
