package bulk

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// localRegistry is an NPMRegistry of packages packed with npm pack from
// directories under testdata: never published, never fetched.
type localRegistry struct {
	// tarballs by name@version.
	tarballs map[string]string
	mu       sync.Mutex
	views    int
}

// packFixture packs testdata/DIR with npm pack into a temporary directory
// and returns its registry: a test that has no npm is skipped (failed
// under CI=true, see needNPM).
func packFixtures(t *testing.T, dirs ...string) *localRegistry {
	t.Helper()
	needNPM(t)
	out := t.TempDir()
	reg := &localRegistry{tarballs: map[string]string{}}
	for _, d := range dirs {
		src, err := filepath.Abs(filepath.Join("testdata", d))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("npm", "pack", "--json", "--ignore-scripts", "--pack-destination", out, src)
		cmd.Dir = out
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm pack %s: %v", d, err)
		}
		var packed []struct{ Name, Version, Filename string }
		if err := json.Unmarshal(b, &packed); err != nil || len(packed) != 1 {
			t.Fatalf("npm pack %s: %v %s", d, err, b)
		}
		reg.tarballs[packed[0].Name+"@"+packed[0].Version] = filepath.Join(out, packed[0].Filename)
	}
	return reg
}

func (l *localRegistry) View(_ context.Context, name, spec string) (Resolved, error) {
	l.mu.Lock()
	l.views++
	l.mu.Unlock()
	for key, tgz := range l.tarballs {
		n, v, _ := strings.Cut(key[1:], "@")
		n = key[:1] + n
		if n != name || (spec != "latest" && spec != v) {
			continue
		}
		var r Resolved
		r.Name, r.Version = n, v
		f, err := os.Open(tgz)
		if err != nil {
			return Resolved{}, err
		}
		h := sha512.New()
		io.Copy(h, f)
		f.Close()
		r.Dist.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil))
		return r, nil
	}
	return Resolved{}, fmt.Errorf("npm view %s@%s: E404", name, spec)
}

func (l *localRegistry) Pack(_ context.Context, name, version, dir string) (string, error) {
	src, ok := l.tarballs[name+"@"+version]
	if !ok {
		return "", fmt.Errorf("npm pack %s@%s: E404", name, version)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	return dst, os.WriteFile(dst, b, 0o644)
}
