//go:build !linux

package overlay

import (
	"context"
	"errors"
)

var errApplyUnsupported = errors.New("workspace changes are read on Linux only")

// TakeBaseline is Linux-only: the workspace is mounted only there.
func TakeBaseline(dir string, opts BaselineOptions) (Baseline, error) {
	return Baseline{}, errApplyUnsupported
}

// Changes is Linux-only.
func Changes(opts ApplyOptions) ([]WorkspaceChange, error) { return nil, errApplyUnsupported }

// Apply is Linux-only.
func Apply(ctx context.Context, opts ApplyOptions, paths ...string) (ApplyResult, error) {
	return ApplyResult{}, errApplyUnsupported
}

// Update is Linux-only.
func (b *Baseline) Update(dir string, applied []WorkspaceChange) error { return errApplyUnsupported }
