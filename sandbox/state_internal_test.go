package sandbox

import (
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestStateSkip: a session's state never keeps the package, the
// workspace, the agent, the engine's files, the mounts or the planted
// files (runs' TestStateSaveKeepsOnlyTheServers saves with this list).
func TestStateSkip(t *testing.T) {
	s := &Session{opts: SessionOptions{Package: "/x", PackageTarget: "/opt/pkg", Mounts: []Mount{{Source: "/x", Target: "/srv/code/"}},
		Seeds: []probes.SeedFile{{Path: "/home/sandbox/.aws/credentials"}}}}
	want := []string{"/opt/pkg", "/workspace", "/sbin/docker-init", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/srv/code", "/home/sandbox/.aws/credentials"}
	if got := s.stateSkip(); !slices.Equal(got, want) {
		t.Errorf("skip %q, want %q", got, want)
	}
}
