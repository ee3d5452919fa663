//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// cacheLockPath is the lock that orders evictions and pins among every
// mcpsandbox process on this host, whichever user runs it: the engine
// checks "no container uses this image" and removes it in two steps, so
// a hold made in between would not save the image.
func cacheLockPath() string { return os.TempDir() + "/mcpsandbox-cache.lock" }

// cacheLockPoll is how often a waiting eviction tries the lock again: a
// pin holds it shared while it makes an image, and flock has no
// deadline of its own.
const cacheLockPoll = 20 * time.Millisecond

// lockCache takes the cache lock, shared (pins) or exclusive (an
// eviction's removal), waiting until ctx ends. It returns the unlock.
func lockCache(ctx context.Context, path string, exclusive bool) (func(), error) {
	f, err := openCacheLock(path)
	if err != nil {
		return nil, fmt.Errorf("opening the cache lock: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing unlocks
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("taking the cache lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the cache lock %s: %w", f.Name(), context.Cause(ctx))
		case <-time.After(cacheLockPoll):
		}
	}
}

// openCacheLock opens the lock file read-only (enough for flock), making
// it when missing. It never opens an existing file with O_CREAT: in a
// sticky directory such as /tmp, fs.protected_regular refuses that for
// another user's file.
func openCacheLock(path string) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue // made by another process meanwhile
		}
		return f, err
	}
}
