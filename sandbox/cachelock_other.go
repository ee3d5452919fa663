//go:build !unix

package sandbox

import "context"

// cacheLockPath is unused where there is no flock.
func cacheLockPath() string { return "" }

// lockCache is a no-op where there is no flock: a hold alone protects a
// pinned image there, but for the engine's own race.
func lockCache(ctx context.Context, path string, exclusive bool) (func(), error) {
	return func() {}, nil
}
