//go:build !linux

package sandbox

import (
	"errors"

	"github.com/mcpsandbox/mcpsandbox/probes"
)

// ErrMountUnsupported marks a system that cannot mount the workspace; the
// copy into an image layer is the fallback (always, off Linux).
var ErrMountUnsupported = errors.New("the workspace cannot be mounted here")

type overlayMount struct{ host, target string }

func newOverlayMount(host, target, layerDir, name string, seeds []probes.SeedFile) (*overlayMount, error) {
	return nil, ErrMountUnsupported
}

func (m *overlayMount) attach(pid int) error { return ErrMountUnsupported }
func (m *overlayMount) upperDir() string     { return "" }
func (m *overlayMount) lowers() []string     { return nil }
func (m *overlayMount) close()               {}
