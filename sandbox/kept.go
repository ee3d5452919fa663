package sandbox

import (
	"sort"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// WorkspaceUpper is where the server's changes to the host workspace
// land (the mount's upper dir): "" when the workspace is not a host
// directory mounted copy-on-write. It lives as long as the container.
func (s *Session) WorkspaceUpper() string {
	target := overlay.Workspace
	if s.opts.PackageIsWorkspace {
		target = s.opts.packageTarget()
	}
	for _, m := range s.mounts {
		if m.target == target {
			return m.upperDir()
		}
	}
	return ""
}

// ContainerID is the session's container ("" before it started).
func (s *Session) ContainerID() string {
	if s.ctr == nil {
		return ""
	}
	return s.ctr.ID
}

// KeptSession is a session's kept container and what a named run needs
// of it.
type KeptSession struct {
	Container string
	// WorkspaceUpper is where the workspace's changes are ("": the
	// workspace was not a mounted host directory).
	WorkspaceUpper string
	// Planted are the files the runner put in the workspace, relative to
	// it.
	Planted []string
}

// KeptInfo is the kept container (after Close with Keep) and what a
// named run records of it.
func (s *Session) KeptInfo() KeptSession {
	k := KeptSession{Container: s.Kept(), WorkspaceUpper: s.WorkspaceUpper()}
	for _, f := range s.opts.Seeds {
		if rel, ok := strings.CutPrefix(f.Path, overlay.Workspace+"/"); ok {
			k.Planted = append(k.Planted, rel)
		}
	}
	sort.Strings(k.Planted)
	return k
}
