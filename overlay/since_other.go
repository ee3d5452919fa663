//go:build !linux

package overlay

import "errors"

// ChangedSince is Linux-only: the workspace is mounted only there.
func ChangedSince(root string, since int64, max int) ([]string, int, error) {
	return nil, 0, errors.New("not supported on this system")
}
