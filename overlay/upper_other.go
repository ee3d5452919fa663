//go:build !linux

package overlay

import (
	"context"
	"errors"
)

type hashed struct{}

// Snapshot is only available on Linux, where overlayfs upper dirs are;
// elsewhere the runner reads changes through the Engine API.
func (u *UpperDir) Snapshot(ctx context.Context) (Snapshot, error) {
	return Snapshot{}, errors.New("reading an overlayfs upper dir needs Linux")
}

// SnapshotWith is Snapshot, on Linux only.
func (u *UpperDir) SnapshotWith(ctx context.Context, opts SnapshotOptions) (Snapshot, error) {
	return u.Snapshot(ctx)
}

// Snapshot is only available on Linux.
func (t *Tree) Snapshot(ctx context.Context) (Snapshot, error) {
	return Snapshot{}, errors.New("reading a directory tree needs Linux")
}

// Update needs Linux: ok is always false.
func (u *UpperDir) Update(ctx context.Context, opts SnapshotOptions) (prev, cur Snapshot, ok bool, err error) {
	return prev, cur, false, nil
}
