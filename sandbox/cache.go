package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"golang.org/x/sync/errgroup"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// DefaultCacheSize bounds the bytes the image cache (workspace, package
// and agent layers) keeps once no scan uses them.
const DefaultCacheSize int64 = 2 << 30

// The kinds of cached images: layers mcpsandbox derives from an image and
// can make again, as opposed to runtime images, which `images build` makes
// and eviction never touches.
const (
	KindWorkspace = "workspace"
	KindPackage   = "package"
	KindAgent     = "agent"
	// kindHold marks a hold: a container created from a cached image and
	// never started, which pins the image while a scan prepares to use it.
	kindHold = "hold"
)

// noneTag is what engines before API 1.42 list as a dangling image's tag.
const noneTag = "<none>:<none>"

// cacheKinds are the kinds eviction may remove.
var cacheKinds = []string{KindWorkspace, KindPackage, KindAgent}

// cacheReaders is how many images ListCache reads at once.
const cacheReaders = 8

// maxPinAttempts bounds how often an image that another run evicted
// between our look and our hold is made again.
const maxPinAttempts = 3

// CacheEngine is the part of the Engine API the image cache uses.
type CacheEngine interface {
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageInspect(ctx context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageHistory(ctx context.Context, ref string, _ ...client.ImageHistoryOption) ([]image.HistoryResponseItem, error)
	ImageRemove(ctx context.Context, ref string, options image.RemoveOptions) ([]image.DeleteResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
}

// CachedImage is one image of the cache.
type CachedImage struct {
	Ref  string // its tag; its id when it has none
	ID   string
	Kind string
	// Own is what the image adds to its base: the size of its top layer,
	// the one mcpsandbox made. The cache's size is the sum of these.
	Own int64
	// Size is the image's whole size, its base's layers included.
	Size int64
	// LastUsed is when a scan last took it (the engine's last tag time:
	// each use tags it again); zero for never since it was made.
	LastUsed time.Time
	// InUse says that a container (running, stopped or a hold) uses it,
	// when the list was made.
	InUse bool
	// Kept says that it carries label.Keep: eviction leaves it.
	Kept bool
}

// ListCache returns the cached images, least recently used first (ties by
// reference). run, when set, limits the list to the images that run made.
func ListCache(ctx context.Context, cli CacheEngine, run string) ([]CachedImage, error) {
	f := filters.NewArgs(filters.Arg("label", label.ManagedFilter))
	if run != "" {
		f.Add("label", label.Run+"="+run)
	}
	sums, err := cli.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	ctrs, err := cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range ctrs {
		used[c.ImageID] = true
	}
	var out []CachedImage
	for _, s := range sums {
		kind := s.Labels[label.Kind]
		if !isCacheKind(kind) {
			continue
		}
		im := CachedImage{Ref: s.ID, ID: s.ID, Kind: kind, Size: s.Size, Own: s.Size, InUse: used[s.ID], Kept: s.Labels[label.Keep] == "true"}
		var tags []string
		for _, tag := range s.RepoTags {
			if tag != noneTag { // a dangling image's "tag" on older engines
				tags = append(tags, tag)
			}
		}
		if len(tags) > 0 {
			sort.Strings(tags)
			im.Ref = tags[0]
		}
		out = append(out, im)
	}
	// Two calls an image, a few images at a time: a cache of 200 images
	// is read in a fraction of a second.
	gone := make([]bool, len(out))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cacheReaders)
	for i := range out {
		im := &out[i]
		g.Go(func() error {
			ins, err := cli.ImageInspect(gctx, im.ID)
			if cerrdefs.IsNotFound(err) {
				gone[i] = true // evicted meanwhile
				return nil
			} else if err != nil {
				return fmt.Errorf("inspecting image %s: %w", im.Ref, err)
			}
			im.LastUsed = ins.Metadata.LastTagTime
			hist, err := cli.ImageHistory(gctx, im.ID)
			if cerrdefs.IsNotFound(err) {
				gone[i] = true
				return nil
			} else if err != nil {
				return fmt.Errorf("reading the history of image %s: %w", im.Ref, err)
			}
			if len(hist) > 0 { // newest first
				im.Own = hist[0].Size
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	kept := out[:0]
	for i, im := range out {
		if !gone[i] {
			kept = append(kept, im)
		}
	}
	out = kept
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.Before(out[j].LastUsed)
		}
		return out[i].Ref < out[j].Ref
	})
	return out, nil
}

func isCacheKind(kind string) bool {
	for _, k := range cacheKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// EvictOptions bounds the cache.
type EvictOptions struct {
	// MaxBytes bounds the sum of the cached images' own sizes; 0 evicts
	// every image no container uses.
	MaxBytes int64
	// Run, when set, limits eviction to the images that run made (the
	// cache's size is then theirs): for tests, on an engine others share.
	Run string
}

// EvictResult says what Evict did.
type EvictResult struct {
	Removed []CachedImage
	// Size is the cache's size after.
	Size int64
	// Pinned are the images it would have removed but could not: in use
	// by a container (the engine refuses) or kept.
	Pinned []CachedImage
}

// Evict removes cached images, least recently used first, until the
// cache's size is within opts.MaxBytes. An image a container uses (a
// scan's, running or not, a kept one, or a hold while a scan prepares)
// is never removed: the engine refuses to remove it without force, and
// that refusal is taken as "in use". Images labelled label.Keep are left.
// Several Evicts and scans may run at once: each removal takes the cache
// lock (see lockCache) that scans hold while they make and hold an
// image; an image another Evict removed first counts as removed.
func Evict(ctx context.Context, cli CacheEngine, opts EvictOptions) (EvictResult, error) {
	list, err := ListCache(ctx, cli, opts.Run)
	if err != nil {
		return EvictResult{}, err
	}
	var res EvictResult
	for _, im := range list {
		res.Size += im.Own
	}
	var errs []error
	for _, im := range list {
		if res.Size <= opts.MaxBytes {
			break
		}
		if im.Kept {
			res.Pinned = append(res.Pinned, im)
			continue
		}
		// No force: with force the engine would untag an image a stopped
		// container uses. PruneChildren removes the untagged parents
		// that a committed workspace image leaves.
		unlock, err := lockCache(ctx, cacheLockPath(), true)
		if err != nil {
			errs = append(errs, err)
			break
		}
		_, err = cli.ImageRemove(ctx, im.Ref, image.RemoveOptions{PruneChildren: true})
		unlock()
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			res.Size -= im.Own
			res.Removed = append(res.Removed, im)
		case cerrdefs.IsConflict(err):
			res.Pinned = append(res.Pinned, im)
		default:
			errs = append(errs, fmt.Errorf("evicting image %s: %w", im.Ref, err))
		}
	}
	return res, errors.Join(errs...)
}

// imageTagger is the engine call that records a use: tagging an image
// again with its own tag sets its last tag time.
type imageTagger interface {
	ImageTag(ctx context.Context, source, target string) error
}

// touch records that image id, tagged ref, was used now, for
// least-recently-used eviction. Images are immutable, so the record is
// the engine's last tag time, which every process sees, whoever runs it,
// with nothing to lock. Tagging by id also puts the tag back if an
// eviction took it meanwhile.
func touch(ctx context.Context, cli Engine, id, ref string) error {
	t, ok := cli.(imageTagger)
	if !ok {
		return nil
	}
	if err := t.ImageTag(ctx, id, ref); err != nil {
		return fmt.Errorf("recording the use of image %s: %w", ref, err)
	}
	return nil
}

// pin is a cached image held for a scan.
type pin struct {
	Ref string // its tag
	// ID is what the scan's containers are made from: a tag may go (an
	// eviction may untag an image even as a hold is made), the id stays
	// while the hold does.
	ID string
	// Hold is the id of the hold container; release removes it.
	Hold string
}

// release removes the hold, once the caller's own container pins the
// image.
func (p pin) release(ctx context.Context, cli Engine) error {
	if p.Hold == "" {
		return nil
	}
	return RemoveContainer(ctx, cli, p.Hold)
}

// pinned makes sure the cached image ref exists, making it with build when
// it does not, pins it with a hold (a container made from it and never
// started, which the engine will not let an image be removed under) and
// records its use. The caller makes its container from the pin's id and
// then releases the hold. Another run may evict ref between the look and
// the hold: then ref is made again, a bounded number of times.
func pinned(ctx context.Context, cli Engine, ref, runID string, build func() error) (pin, error) {
	// Shared with other pins, exclusive of evictions' removals: a removal
	// that began before the hold could still take the image.
	unlock, err := lockCache(ctx, cacheLockPath(), false)
	if err != nil {
		return pin{}, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		img, err := cli.ImageInspect(ctx, ref)
		if cerrdefs.IsNotFound(err) {
			if err := build(); err != nil {
				return pin{}, err
			}
			img, err = cli.ImageInspect(ctx, ref)
		}
		if cerrdefs.IsNotFound(err) && attempt < maxPinAttempts {
			continue // evicted as soon as made
		}
		if err != nil {
			return pin{}, fmt.Errorf("inspecting image %s: %w", ref, err)
		}
		// Not cut by a signal: a create cut short could leave the hold
		// with no id to remove it by.
		cctx, cancel := createContext(ctx)
		created, err := cli.ContainerCreate(cctx, &container.Config{
			Image: img.ID, Entrypoint: []string{}, Cmd: []string{"/bin/true"},
			Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: kindHold}),
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		cancel()
		if cerrdefs.IsNotFound(err) && attempt < maxPinAttempts {
			continue // evicted between the look and the hold
		}
		if err != nil {
			return pin{}, fmt.Errorf("holding image %s: %w", ref, err)
		}
		p := pin{Ref: ref, ID: img.ID, Hold: created.ID}
		if err := touch(ctx, cli, img.ID, ref); err != nil {
			return pin{}, errors.Join(err, p.release(context.WithoutCancel(ctx), cli))
		}
		return p, nil
	}
}
