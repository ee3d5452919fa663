package sandbox_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// cacheDir returns a directory holding one file of random bytes, so that
// its workspace image is this test's alone.
func cacheDir(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	b := make([]byte, size)
	rand.Read(b)
	must(t, os.WriteFile(filepath.Join(dir, "data.bin"), b, 0o644))
	return dir
}

// evictAll empties the cache of run id when the test ends.
func evictAll(t *testing.T, cli *client.Client, runID string) {
	t.Cleanup(func() {
		if _, err := sandbox.Evict(context.Background(), cli, sandbox.EvictOptions{Run: runID}); err != nil {
			t.Errorf("emptying the cache of run %s: %v", runID, err)
		}
	})
}

func refs(list []sandbox.CachedImage) []string {
	var out []string
	for _, im := range list {
		out = append(out, im.Ref)
	}
	return out
}

// TestEvictLeastRecentlyUsedSparesInUse makes three workspace images A, B,
// C, used in the order A B C A, with a container on B: B is the least
// recently used but in use, so a bound with room for two evicts C and
// keeps A; once B's container goes, a bound of 0 evicts both.
func TestEvictLeastRecentlyUsedSparesInUse(t *testing.T) {
	cli := sandboxtest.Docker(t)
	base := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	evictAll(t, cli, runID)
	dirs := map[string]string{"A": cacheDir(t, 64<<10), "B": cacheDir(t, 64<<10), "C": cacheDir(t, 64<<10)}
	ref := map[string]string{}
	for _, n := range []string{"A", "B", "C", "A"} {
		r, _, err := sandbox.WorkspaceImage(ctx, cli, base, dirs[n], "/workspace", runID)
		must(t, err)
		ref[n] = r
	}
	ctr, err := cli.ContainerCreate(ctx, &container.Config{Image: ref["B"], Cmd: []string{"true"}, Labels: label.Set(runID, nil)},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	must(t, err)
	list, err := sandbox.ListCache(ctx, cli, runID)
	must(t, err)
	if got, want := refs(list), []string{ref["B"], ref["C"], ref["A"]}; !slices.Equal(got, want) {
		t.Fatalf("cache, least recently used first = %v, want %v (B C A)", got, want)
	}
	own := map[string]int64{}
	for _, im := range list {
		if im.Kind != sandbox.KindWorkspace || im.Own < 64<<10 || im.Own >= im.Size {
			t.Errorf("%s: kind %q, own %d of %d bytes; want a workspace layer of at least 64 KiB, less than the image", im.Ref, im.Kind, im.Own, im.Size)
		}
		if im.LastUsed.IsZero() {
			t.Errorf("%s: no last use recorded", im.Ref)
		}
		if in := im.Ref == ref["B"]; im.InUse != in {
			t.Errorf("%s: in use %v, want %v", im.Ref, im.InUse, in)
		}
		own[im.Ref] = im.Own
	}

	res, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{MaxBytes: own[ref["A"]] + own[ref["B"]], Run: runID})
	must(t, err)
	if got := refs(res.Removed); !slices.Equal(got, []string{ref["C"]}) {
		t.Errorf("evicted %v, want C %s only", got, ref["C"])
	}
	if got := refs(res.Pinned); !slices.Equal(got, []string{ref["B"]}) {
		t.Errorf("pinned %v, want B %s (in use)", got, ref["B"])
	}
	if res.Size != own[ref["A"]]+own[ref["B"]] {
		t.Errorf("cache size after = %d, want %d", res.Size, own[ref["A"]]+own[ref["B"]])
	}
	for n, want := range map[string]bool{"A": true, "B": true, "C": false} {
		if _, err := cli.ImageInspect(ctx, ref[n]); (err == nil) != want {
			t.Errorf("%s %s there: %v, want %v", n, ref[n], err == nil, want)
		}
	}

	must(t, cli.ContainerRemove(ctx, ctr.ID, container.RemoveOptions{Force: true}))
	res, err = sandbox.Evict(ctx, cli, sandbox.EvictOptions{Run: runID})
	must(t, err)
	if got := refs(res.Removed); !slices.Equal(got, []string{ref["B"], ref["A"]}) || res.Size != 0 {
		t.Errorf("evicted %v (size after %d), want B then A and an empty cache", got, res.Size)
	}
}

// evictingEngine removes the image a hold is about to be made of, once:
// another run's eviction between our look and our hold.
type evictingEngine struct {
	*client.Client
	once    sync.Once
	evicted string
}

func (e *evictingEngine) ContainerCreate(ctx context.Context, cfg *container.Config, host *container.HostConfig, nw *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	if cfg.Labels[label.Kind] == "hold" {
		e.once.Do(func() {
			if _, err := e.Client.ImageRemove(ctx, cfg.Image, image.RemoveOptions{}); err == nil {
				e.evicted = cfg.Image
			}
		})
	}
	return e.Client.ContainerCreate(ctx, cfg, host, nw, p, name)
}

// TestImageEvictedBeforeItsHoldIsMadeAgain: an agent image that exists
// when looked at and is gone when the hold is made is made again, and
// the caller gets it.
func TestImageEvictedBeforeItsHoldIsMadeAgain(t *testing.T) {
	cli := sandboxtest.Docker(t)
	base := sandboxtest.FixtureImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	first, err := sandbox.AgentImage(ctx, cli, base, sandboxtest.Agent(t), runID)
	must(t, err)
	eng := &evictingEngine{Client: cli}
	again, err := sandbox.AgentImage(ctx, eng, base, sandboxtest.Agent(t), runID)
	must(t, err)
	if eng.evicted == "" || again != first {
		t.Fatalf("evicted %q before the hold; got %q, want %q again", eng.evicted, again, first)
	}
	if _, err := cli.ImageInspect(ctx, again); err != nil {
		t.Errorf("the image made again is not there: %v", err)
	}
}

// TestParallelScansWithEviction runs two scans that copy their
// workspaces into images, at once, while evictions with a bound of 0 run
// in a loop: the scans see their workspaces, nothing is left behind, and
// once they end the cache empties.
func TestParallelScansWithEviction(t *testing.T) {
	cli := sandboxtest.Docker(t)
	base := sandboxtest.FixtureImage(t, cli) // its agent image is this test's
	runID := label.NewRunID()
	evictAll(t, cli, runID)
	ctx := context.Background()
	done := make(chan struct{})
	var evictions sync.WaitGroup
	evictions.Add(1)
	evicted := 0
	go func() {
		defer evictions.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{Run: runID})
			if err != nil {
				t.Errorf("evicting: %v", err)
				return
			}
			evicted += len(res.Removed)
		}
	}()
	var scans sync.WaitGroup
	for i := range 2 {
		scans.Add(1)
		go func() {
			defer scans.Done()
			ws := t.TempDir()
			want := fmt.Sprintf("content of scan %d", i)
			if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(want), 0o644); err != nil {
				t.Error(err)
				return
			}
			opts := scan.Options{SessionOptions: sandbox.SessionOptions{Image: base, Argv: []string{sandboxtest.FixtureMount, "honest"}, RunID: runID,
				Workspace: ws, CopyWorkspace: true}, NoSeed: true, Linger: sandboxtest.Linger}
			opts.Probes = steps(t, `[{"tool":"read_file","arguments":{"path":"f.txt"}}]`)
			for range 2 {
				res, err := scanWithRunID(t, cli, opts)
				if err != nil {
					t.Errorf("scan %d: %v", i, err)
					return
				}
				if c := callsOf(res.Report, "read_file"); len(c) != 1 || !strings.Contains(c[0].Result, want) {
					t.Errorf("scan %d read %+v, want %q", i, c, want)
				}
			}
		}()
	}
	scans.Wait()
	close(done)
	evictions.Wait()
	res, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{Run: runID})
	must(t, err)
	if res.Size != 0 || len(res.Pinned) != 0 {
		t.Errorf("after the scans the cache holds %d bytes, pinned %v; want it empty", res.Size, refs(res.Pinned))
	}
	t.Logf("%d image(s) evicted during the scans", evicted)
}

// TestKeptContainerIsNeitherReapedNorEvicted: a container left with Keep
// is labelled to keep; the reaper leaves it and eviction leaves its image.
func TestKeptContainerIsNeitherReapedNorEvicted(t *testing.T) {
	cli := sandboxtest.Docker(t)
	base := sandboxtest.FixtureImage(t, cli)
	runID := label.NewRunID()
	evictAll(t, cli, runID)
	ctx := context.Background()
	ws := cacheDir(t, 1<<10)
	res, err := scanWithRunID(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: base, Argv: []string{sandboxtest.FixtureMount, "honest"}, RunID: runID,
		Workspace: ws, CopyWorkspace: true, Keep: true}, NoSeed: true, Linger: sandboxtest.Linger})
	must(t, err)
	if res.ContainerID == "" {
		t.Fatal("no container kept")
	}
	t.Cleanup(func() { cli.ContainerRemove(ctx, res.ContainerID, container.RemoveOptions{Force: true}) })
	ins, err := cli.ContainerInspect(ctx, res.ContainerID)
	must(t, err)
	if ins.Config.Labels[label.Keep] != "true" {
		t.Errorf("kept container labels %v, want %s=true", ins.Config.Labels, label.Keep)
	}
	removed, err := sandbox.Reap(ctx, cli)
	must(t, err)
	if slices.Contains(removed, res.ContainerID) {
		t.Errorf("the reaper removed the kept container")
	}
	ev, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{Run: runID})
	must(t, err)
	if _, err := cli.ImageInspect(ctx, ins.Image); cerrdefs.IsNotFound(err) {
		t.Errorf("the kept container's image was evicted (removed %v)", refs(ev.Removed))
	}
	if len(ev.Pinned) == 0 {
		t.Errorf("nothing pinned by the kept container; removed %v", refs(ev.Removed))
	}
}
