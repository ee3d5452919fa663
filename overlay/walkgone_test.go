//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWalkADirectoryRemovedSinceOpened: a directory removed between its
// opening and its listing (a lock directory made and removed by the
// server during a snapshot) is walked as empty, not an error that would
// make the call's file effects a problem.
func TestWalkADirectoryRemovedSinceOpened(t *testing.T) {
	d := filepath.Join(t.TempDir(), "config.json.lock")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(d, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	met := 0
	if err := walkFD(fd, "/config.json.lock", func(node) error { met++; return nil }); err != nil {
		t.Errorf("walking a directory removed since opened: %v", err)
	}
	if met != 0 {
		t.Errorf("met %d entries in a removed directory", met)
	}
}
