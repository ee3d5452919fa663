package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// fakeCleaner is an engine holding mcpsandbox's containers and images; it
// records what is removed, and whether with force. (The shared test
// engine is no place to see what Clean leaves of others'.)
type fakeCleaner struct {
	containers []container.Summary
	images     []image.Summary
	removed    []string
	forced     []string
}

func (f *fakeCleaner) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	var out []container.Summary
	for _, c := range f.containers {
		if !slices.Contains(f.removed, c.ID) {
			out = append(out, c)
		}
	}
	return out, nil
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
func (f *fakeCleaner) ImageRemove(_ context.Context, ref string, o image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.removed = append(f.removed, ref)
	if o.Force {
		f.forced = append(f.forced, ref)
	}
	return nil, nil
}

// cleanFixture is an engine with one container of each sort and images
// used and not.
func cleanFixture(t *testing.T) *fakeCleaner {
	dead := sandboxtest.DeadOwner(t)
	ctr := func(id, owner string, keep bool, img string) container.Summary {
		l := label.Set("r", map[string]string{label.Kind: "sandbox"})
		if owner != "" {
			l[label.Owner] = owner
		}
		if keep {
			l[label.Keep] = "true"
		}
		return container.Summary{ID: id, Labels: l, ImageID: img}
	}
	img := func(id, kind string, tags ...string) image.Summary {
		return image.Summary{ID: id, RepoTags: tags, Labels: label.Set("r", map[string]string{label.Kind: kind})}
	}
	liveImg := img("made-by-live", sandbox.KindWorkspace)
	liveImg.Labels[label.Owner] = label.SelfOwner()
	return &fakeCleaner{
		containers: []container.Summary{
			ctr("orphan", dead, false, "ws"),
			ctr("live", label.SelfOwner(), false, "node"),
			ctr("unowned", "", false, ""),
			ctr("kept-orphan", dead, true, ""),
			ctr("kept-live", label.SelfOwner(), true, ""),
			ctr("named-run", dead, true, "agent"),
		},
		images: []image.Summary{img("ws", sandbox.KindWorkspace), img("node", "runtime"), img("agent", sandbox.KindAgent),
			img("pkg", sandbox.KindPackage, "mcpsandbox/workspace:a", "mcpsandbox/workspace:b"), liveImg},
	}
}

func ids(ls []sandbox.Leftover) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ID)
	}
	slices.Sort(out)
	return out
}

// TestCleanLeavesWhatLiveProcessesOwn: plain clean removes only what no
// live process owns: the dead runner's container, then the images no
// container uses, never with force (an image of two tags tag by tag). It
// leaves, and says why, a live process's containers (kept or not), one
// whose owner cannot be told, a kept container of a dead runner, the
// store's named run, the images containers use and an image a live
// process made.
func TestCleanLeavesWhatLiveProcessesOwn(t *testing.T) {
	f := cleanFixture(t)
	res, err := sandbox.Clean(context.Background(), f, sandbox.CleanOptions{Images: true, Runs: map[string]bool{"named-run": true},
		Confirm: func([]sandbox.Leftover) bool { t.Error("asked with nothing to ask about"); return true }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"orphan", "ws", "mcpsandbox/workspace:a", "mcpsandbox/workspace:b"}; !slices.Equal(f.removed, want) || len(f.forced) > 0 {
		t.Errorf("removed %v (forced %v), want %v, none forced", f.removed, f.forced, want)
	}
	if res.Removed["container"] != 1 || res.Removed["image"] != 2 || res.Total() != 3 {
		t.Errorf("counted %v", res.Removed)
	}
	for why, want := range map[string][]string{
		sandbox.LeftLive:  {"kept-live", "live", "made-by-live", "unowned"},
		sandbox.LeftKept:  {"kept-orphan"},
		sandbox.LeftRun:   {"named-run"},
		sandbox.LeftInUse: {"agent", "node"},
	} {
		if got := ids(res.LeftBy(why)); !slices.Equal(got, want) {
			t.Errorf("left %s: %v, want %v", why, got, want)
		}
	}
	owners := sandbox.Owners(res.LeftBy(sandbox.LeftLive))
	self := fmt.Sprintf("pid %d on this host (sandbox, workspace)", os.Getpid())
	if !slices.Contains(owners, self) || !slices.Contains(owners, "no owner label (sandbox)") {
		t.Errorf("owners %q: want %q and the unowned one", owners, self)
	}
}

// TestCleanLiveAndKeptAsk: --live and --kept add the live and kept
// containers, only once Confirm says yes, and never the store's named
// runs; a no removes none of them.
func TestCleanLiveAndKeptAsk(t *testing.T) {
	for _, yes := range []bool{false, true} {
		t.Run(fmt.Sprint("yes=", yes), func(t *testing.T) {
			f := cleanFixture(t)
			var asked []sandbox.Leftover
			res, err := sandbox.Clean(context.Background(), f, sandbox.CleanOptions{Live: true, Kept: true, Runs: map[string]bool{"named-run": true},
				Confirm: func(extra []sandbox.Leftover) bool { asked = extra; return yes }})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"kept-live", "kept-orphan", "live", "unowned"}; !slices.Equal(ids(asked), want) {
				t.Errorf("asked about %v, want %v", ids(asked), want)
			}
			want := []string{"orphan"}
			if yes {
				want = []string{"kept-live", "kept-orphan", "live", "orphan", "unowned"}
			}
			got := slices.Clone(f.removed)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("removed %v, want %v", got, want)
			}
			if slices.Contains(f.removed, "named-run") || !slices.Equal(ids(res.LeftBy(sandbox.LeftRun)), []string{"named-run"}) {
				t.Errorf("the named run: removed %v, left %v", f.removed, res.Left)
			}
			if !yes && len(res.LeftBy(sandbox.LeftLive)) != 3 {
				t.Errorf("left live after a no: %v", ids(res.LeftBy(sandbox.LeftLive)))
			}
		})
	}
}

// TestOwnersSaysWho groups leftovers by owner, kinds in parentheses.
func TestOwnersSaysWho(t *testing.T) {
	got := sandbox.Owners([]sandbox.Leftover{
		{Owner: "ci-2:7:1:1", Kind: "sandbox"}, {Owner: "ci-2:7:1:1", Kind: "hold"}, {Owner: "garbage"}, {Kind: "sandbox"},
	})
	want := []string{"no owner label (sandbox)", "owner garbage", "pid 7 on host ci-2 (hold, sandbox)"}
	if !slices.Equal(got, want) || !strings.Contains(strings.Join(got, ","), "ci-2") {
		t.Errorf("owners %q, want %q", got, want)
	}
}
