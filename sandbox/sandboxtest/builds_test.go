package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// TestReapBuildDirs: the build directory of a test binary that ended is
// removed; this one's, one being made (no owner file yet), one whose
// owner cannot be told, and what is not a build directory are left.
func TestReapBuildDirs(t *testing.T) {
	tmp := t.TempDir()
	// A process's owner value, read while it ran: its start time tells it
	// from whatever reuses its pid.
	gone := exec.Command("sleep", "60")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	goneOwner := label.OwnerOf(gone.Process.Pid)
	gone.Process.Kill()
	gone.Wait()
	dirs := map[string]string{
		buildDirPrefix + "gone":    goneOwner,
		buildDirPrefix + "mine":    label.SelfOwner(),
		buildDirPrefix + "unknown": "not an owner",
		buildDirPrefix + "new":     "",
		"mcpsandbox-other":         goneOwner,
	}
	for name, owner := range dirs {
		if err := os.Mkdir(filepath.Join(tmp, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(tmp, name, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	reapBuildDirs(tmp)
	for name := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gone := os.IsNotExist(err); gone != (name == buildDirPrefix+"gone") {
			t.Errorf("%s: removed %t", name, gone)
		}
	}
}
