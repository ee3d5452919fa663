package bulk

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errSignal stands for the cause a signal gives the run's context.
var errSignal = errors.New("interrupted (SIGINT)")

// cutRegistry is a registry whose download is cut off by a signal: it
// writes part of the tarball, then the run's context ends.
type cutRegistry struct {
	NPMRegistry
	cancel context.CancelCauseFunc
}

func (c cutRegistry) Pack(ctx context.Context, name, version, dir string) (string, error) {
	if err := os.WriteFile(filepath.Join(dir, "partial.tgz"), []byte("\x1f\x8b"), 0o644); err != nil {
		return "", err
	}
	c.cancel(errSignal)
	<-ctx.Done()
	return "", ctx.Err()
}

// TestSignalDuringFetchLeavesNothing: a signal while a package downloads
// leaves no container, no temporary file or directory in the cache or the
// results (the results' lock aside), and no result for the package (a
// later run fetches it again).
func TestSignalDuringFetchLeavesNothing(t *testing.T) {
	cli := docker(t)
	reg := packFixtures(t, "echo-mcp")
	specs, bad := ParseList("list.txt", strings.NewReader("npm:echo-mcp\n"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	o := integrationOptions(t, cli, reg, nil)
	cache := t.TempDir()
	o.Installers[KindNPM] = NPM{Cache: cache, Registry: cutRegistry{NPMRegistry: reg, cancel: cancel}, Node: "20.0.0"}
	res, _ := Run(ctx, specs, o)
	for _, r := range res {
		if r.Spec == specs[0].String() && r.Status != 0 {
			t.Errorf("the interrupted package has a result: %+v", r)
		}
	}
	for _, dir := range []string{cache, o.Results} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".") && d.Name() != lockFile && p != dir {
				t.Errorf("left behind: %s", p)
			}
			return nil
		})
	}
	noContainersOfThisProcess(t, cli)
}
