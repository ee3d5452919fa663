//go:build unix

package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestCacheLock: pins share the lock; an eviction's removal waits for
// them (here until its context ends) and gets it once they are done.
func TestCacheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.lock")
	ctx := context.Background()
	pin1, err := lockCache(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	pin2, err := lockCache(ctx, path, false)
	if err != nil {
		t.Fatalf("a second shared lock: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 3*cacheLockPoll)
	defer cancel()
	if _, err := lockCache(short, path, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive while shared is held: %v, want the context's end", err)
	}
	pin1()
	pin2()
	evict, err := lockCache(ctx, path, true)
	if err != nil {
		t.Fatalf("exclusive once free: %v", err)
	}
	short2, cancel2 := context.WithTimeout(ctx, time.Duration(3)*cacheLockPoll)
	defer cancel2()
	if _, err := lockCache(short2, path, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shared while exclusive is held: %v, want the context's end", err)
	}
	evict()
}
