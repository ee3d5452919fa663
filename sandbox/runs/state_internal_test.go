package runs

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStateSaveKeepsOnlyTheServers: a state keeps the server's files
// outside the places it is told to skip (a session's: the workspace, the
// package, the mounts, the planted files, the agent, the engine's files;
// sandbox's TestStateSkip holds a session to that list); what it cannot
// keep (a whiteout) is listed; past the bound nothing is saved.
func TestStateSaveKeepsOnlyTheServers(t *testing.T) {
	upper := t.TempDir()
	for p, content := range map[string]string{
		"home/sandbox/.srv/db.json":     "{}",
		"workspace/edit.txt":            "no",
		"opt/pkg/cache":                 "no",
		"srv/code":                      "no",
		"home/sandbox/.aws/credentials": "planted",
		"sbin/docker-init":              "not the agent",
		"etc/hosts":                     "no",
	} {
		if err := os.MkdirAll(filepath.Join(upper, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(upper, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(upper, "etc", "gone"), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	skip := []string{"/opt/pkg", "/workspace", "/sbin/docker-init", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/srv/code", "/home/sandbox/.aws/credentials"}
	sd := &StateDir{Name: "t", Dir: t.TempDir()}
	info, err := sd.save(upper, skip)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sd.tarPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
	if !slices.Equal(files, []string{"home/sandbox/.srv/db.json"}) {
		t.Errorf("state files %v", files)
	}
	if os.Geteuid() == 0 && !slices.Equal(info.Skipped, []string{"/etc/gone"}) {
		t.Errorf("skipped %v", info.Skipped)
	}
	sd.MaxBytes = 1
	if _, err := sd.save(upper, skip); !errors.Is(err, errStateBound) {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := os.Stat(sd.tarPath()); err != nil {
		t.Errorf("the last save is gone: %v", err)
	}
}
