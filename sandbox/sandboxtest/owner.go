package sandboxtest

import (
	"os/exec"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// DeadOwner is an Owner label value (label.OwnerOf) of a process that has
// exited: a runner that died.
func DeadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	owner := label.OwnerOf(cmd.Process.Pid) // read while it lives: its start time
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return owner
}
