package sandbox

import (
	"errors"
	"testing"
)

// TestPackageTargets: a package target is a clean absolute path of its
// own: not the root, not over or under the workspace, a --mount or the
// kernel's filesystems.
func TestPackageTargets(t *testing.T) {
	dir := t.TempDir()
	for target, ok := range map[string]bool{
		"": true, "/package": true, "/srv/mcp/pkg": true, "/workspacex": true,
		"/": false, "package": false, "/a/../b": false, "/workspace": false, "/workspace/pkg": false,
		"/proc/x": false, "/dev": false, "/opt": false, "/opt/fixture/server/x": false,
	} {
		o := SessionOptions{Package: dir, PackageTarget: target, Mounts: []Mount{{Source: dir, Target: "/opt/fixture/server"}}}
		dirs, err := o.hostDirs()
		var ie *InfraError
		if ok != (err == nil) || (err != nil && !errors.As(err, &ie)) {
			t.Errorf("target %q: %v", target, err)
			continue
		}
		if ok && (len(dirs) != 1 || dirs[0].target != o.packageTarget()) {
			t.Errorf("target %q: %+v", target, dirs)
		}
	}
	if _, err := (SessionOptions{Package: dir + "/missing"}).hostDirs(); err == nil {
		t.Error("a missing package directory was accepted")
	}
	if _, err := (SessionOptions{PackageTarget: "/p"}).hostDirs(); err == nil {
		t.Error("a target without a package was accepted")
	}
}
