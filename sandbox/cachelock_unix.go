//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
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
func lockCache(ctx context.Context, exclusive bool) (func(), error) {
	f, err := os.OpenFile(cacheLockPath(), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("opening the cache lock: %w", err)
	}
	// Others' umask may leave it unwritable; read-only is enough for flock.
	f.Chmod(0o666)
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
