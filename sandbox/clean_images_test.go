package sandbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// fakeCleaner is an engine holding mcpsandbox's containers and images; it
// records what is removed. (Clean empties every mcpsandbox object of the
// engine, so the shared test engine is no place to run it.)
type fakeCleaner struct {
	containers []container.Summary
	images     []image.Summary
	removed    []string
}

func (f *fakeCleaner) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	return f.containers, nil
}
func (f *fakeCleaner) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeCleaner) NetworkList(context.Context, network.ListOptions) ([]network.Summary, error) {
	return nil, nil
}
func (f *fakeCleaner) NetworkRemove(context.Context, string) error { return nil }
func (f *fakeCleaner) VolumeList(context.Context, volume.ListOptions) (volume.ListResponse, error) {
	return volume.ListResponse{}, nil
}
func (f *fakeCleaner) VolumeRemove(context.Context, string, bool) error { return nil }
func (f *fakeCleaner) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	return f.images, nil
}
func (f *fakeCleaner) ImageRemove(_ context.Context, id string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.removed = append(f.removed, id)
	return nil, nil
}

// TestCleanImagesEmptiesTheCache: clean --images removes the cached
// layers (workspace, package, agent) with the runtime images, and the
// containers first, kept ones and holds included.
func TestCleanImagesEmptiesTheCache(t *testing.T) {
	img := func(id, kind string) image.Summary {
		return image.Summary{ID: id, Labels: label.Set("r", map[string]string{label.Kind: kind})}
	}
	f := &fakeCleaner{
		containers: []container.Summary{{ID: "kept", Labels: map[string]string{label.Keep: "true"}}, {ID: "hold"}},
		images:     []image.Summary{img("ws", sandbox.KindWorkspace), img("pkg", sandbox.KindPackage), img("agent", sandbox.KindAgent), img("node", "runtime")},
	}
	n, err := sandbox.Clean(context.Background(), f, sandbox.CleanOptions{Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kept", "hold", "ws", "pkg", "agent", "node"}; n != len(want) || !slices.Equal(f.removed, want) {
		t.Errorf("removed %d: %v, want %v", n, f.removed, want)
	}
}
