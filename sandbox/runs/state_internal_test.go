package runs

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestWriteJSONSideBySide: two processes may write one run's record at
// once; each write is whole (the file decodes as one of them) and leaves
// no temporary file. With one fixed temporary name the writers renamed
// each other's files away, and a write failed.
func TestWriteJSONSideBySide(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "meta.json")
	errs := make(chan error, 16)
	for i := range 16 {
		go func() { errs <- writeJSON(p, map[string]any{"writer": i, "pad": strings.Repeat("x", 1<<16)}) }()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var got map[string]any
	b, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(b, &got)
	}
	if err != nil || len(got) != 2 {
		t.Fatalf("meta.json = %.80q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left, want meta.json alone", len(ents))
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("meta.json mode %v, %v; want 0600", fi.Mode(), err)
	}
}
