//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

type hostView struct{}

func openHostView(id string, pid int, lim overlay.Limits, volumes []string) (*hostView, error) {
	return nil, errors.New("reading a container's mounts from the host needs Linux")
}

func (v *hostView) Snapshot(ctx context.Context, deadline time.Time) (overlay.Snapshot, error) {
	return overlay.Snapshot{}, nil
}

func (v *hostView) close() {}

func (v *hostView) owns(p string) bool { return false }
