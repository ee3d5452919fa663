//go:build !linux

package sandbox

import (
	"errors"
	"time"
)

// diskWatch needs the host's /proc; elsewhere the disk bound is not watched.
type diskWatch struct{}

type diskResult struct {
	Exceeded bool
	Peak     int64
	Cost     time.Duration
	Polls    int
	Err      error
}

func newDiskWatch(pid int, bound int64, interval time.Duration, dirs, files, mounts []string) (*diskWatch, error) {
	return nil, errors.New("watching the disk needs Linux")
}

func (w *diskWatch) start()                 {}
func (w *diskWatch) finish(bool) diskResult { return diskResult{} }
func (w *diskWatch) stopped() bool          { return false }
