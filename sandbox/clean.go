package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Reaper is the part of the Engine API that finding and removing leftovers
// uses.
type Reaper interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerKill(ctx context.Context, containerID, signal string) error
}

// Reaped is what a reap did.
type Reaped struct {
	// Removed are the containers of dead runs, removed.
	Removed []string
	// Stopped are kept containers (label.Keep) still running after their
	// runner died, stopped and left in place: their changes are the
	// named run's until applied or cleaned.
	Stopped []string
}

// Reap removes the containers of runs whose owning process has died: a
// runner killed with SIGKILL cannot clean up after itself, so the next one
// does. Containers of live runs, containers a user asked to keep
// (label.Keep), and anything not labelled as ours, are left alone. It
// returns the ids removed. See ReapAll for what it does to kept ones.
func Reap(ctx context.Context, cli Reaper) ([]string, error) {
	r, err := ReapAll(ctx, cli)
	return r.Removed, err
}

// ReapAll is Reap, and it also stops (never removes) a kept container
// that still runs while its runner is gone: a server that ignores the end
// of its stdin would otherwise run on, unwatched, for ever. A kept
// container with no owner label (made before kept ones carried one) is
// left as it is: whether its runner lives cannot be told.
func ReapAll(ctx context.Context, cli Reaper) (Reaped, error) {
	var r Reaped
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		return r, fmt.Errorf("listing mcpsandbox containers: %w", err)
	}
	var errs []error
	for _, c := range list {
		owner, ok := c.Labels[label.Owner]
		if !ok || label.OwnerAlive(owner) {
			continue
		}
		if c.Labels[label.Keep] == "true" {
			if c.State != containerRunning && c.State != containerPaused {
				continue
			}
			if err := killContainer(ctx, cli, c.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Stopped = append(r.Stopped, c.ID)
			continue
		}
		if err := RemoveContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		r.Removed = append(r.Removed, c.ID)
	}
	return r, errors.Join(errs...)
}

// The engine's names for a container's states (container.Summary.State)
// in which its processes still exist.
const (
	containerRunning = "running"
	containerPaused  = "paused"
)

// killContainer stops a kept container with SIGKILL: its server is the
// adversary and may ignore SIGTERM, and what it wrote is in the layer
// already. A container that is already gone or stopped counts as
// stopped.
func killContainer(ctx context.Context, cli Reaper, id string) error {
	err := cli.ContainerKill(ctx, id, "KILL")
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) { // conflict: "is not running"
		return nil
	}
	return fmt.Errorf("stopping kept container %.12s: %w", id, err)
}

// RemoveContainer force-removes a container and its anonymous volumes;
// a container that is already gone counts as removed.
func RemoveContainer(ctx context.Context, cli interface {
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
}, id string) error {
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if cerrdefs.IsConflict(err) { // "removal already in progress"
		return nil
	}
	return fmt.Errorf("removing container %.12s: %w", id, err)
}

// Cleaner is the part of the Engine API that Clean uses.
type Cleaner interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)
	NetworkRemove(ctx context.Context, networkID string) error
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)
}

// CleanOptions says what Clean removes beyond what no live process owns.
type CleanOptions struct {
	// Images adds the images: the runtime images and the cache.
	Images bool
	// Runs are containers to leave: the named runs' of the store (see
	// RunStore), whose workspace changes are in them until applied or
	// cleaned by name.
	Runs map[string]bool
	// Live adds what a live process owns (another scan's, run's or test's
	// containers), and what Clean cannot tell is not (another host's or
	// pid namespace's, or no owner label).
	Live bool
	// Kept adds the kept containers (label.Keep) whose runner is gone: a
	// --keep container, or a named run of another store (another user's,
	// another XDG_STATE_HOME).
	Kept bool
	// Confirm, when set, is asked before anything Live or Kept added is
	// removed, with what that is; false removes none of it.
	Confirm func(extra []Leftover) bool
}

// Why an object is left, or would be but for an option.
const (
	LeftLive   = "live"    // its owner lives, or cannot be told dead
	LeftKept   = "kept"    // label.Keep, its runner gone
	LeftRun    = "run"     // a named run of the store
	LeftInUse  = "in-use"  // a container uses it (an image, network, volume)
	LeftRefuse = "refused" // the engine refused to remove it (child images, say)
)

// Leftover is an object Clean left, or asks about.
type Leftover struct {
	Type string // "container", "network", "volume", "image"
	ID   string
	// Why is one of the Left* reasons.
	Why string
	// Owner is the label.Owner value ("": none); Kind the label.Kind.
	Owner, Kind string
}

// CleanResult is what Clean did.
type CleanResult struct {
	// Removed counts the objects removed, by type.
	Removed map[string]int
	// Left are the objects left, with why.
	Left []Leftover
}

// Total is how many objects were removed.
func (r CleanResult) Total() int {
	n := 0
	for _, v := range r.Removed {
		n += v
	}
	return n
}

// LeftBy returns the leftovers of one reason.
func (r CleanResult) LeftBy(why string) []Leftover {
	var out []Leftover
	for _, l := range r.Left {
		if l.Why == why {
			out = append(out, l)
		}
	}
	return out
}

// Clean removes what mcpsandbox made and no live process owns, by the
// reaper's rule (label.OwnerAlive on label.Owner): the containers of runs
// whose runner is gone, then the networks and volumes no container uses,
// then with opts.Images the images no container uses. A kept container
// (label.Keep) is left, as the reaper leaves it, and so are the store's
// named runs (opts.Runs). opts.Live adds what live processes own,
// opts.Kept the kept containers; opts.Confirm is asked first. Nothing is
// ever force-removed but a container: an image, a network or a volume a
// container uses is left (the engine refuses), and image removals take
// the cache lock, so that an image a scan is making or holding stays.
func Clean(ctx context.Context, cli Cleaner, opts CleanOptions) (CleanResult, error) {
	res := CleanResult{Removed: map[string]int{}}
	f := filters.NewArgs(filters.Arg("label", label.ManagedFilter))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return res, fmt.Errorf("listing mcpsandbox containers: %w", err)
	}
	var remove, extra []Leftover
	for _, c := range cs {
		l := Leftover{Type: "container", ID: c.ID, Owner: c.Labels[label.Owner], Kind: c.Labels[label.Kind]}
		switch l.Why = containerLeft(c.ID, c.Labels, opts.Runs); l.Why {
		case "":
			remove = append(remove, l)
		case LeftLive, LeftKept:
			if l.Why == LeftLive && opts.Live || l.Why == LeftKept && opts.Kept {
				extra = append(extra, l)
			} else {
				res.Left = append(res.Left, l)
			}
		default:
			res.Left = append(res.Left, l)
		}
	}
	if len(extra) > 0 {
		if opts.Confirm == nil || opts.Confirm(extra) {
			remove = append(remove, extra...)
		} else {
			res.Left = append(res.Left, extra...)
		}
	}
	var errs []error
	for _, l := range remove {
		if err := RemoveContainer(ctx, cli, l.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed[l.Type]++
	}
	errs = append(errs, cleanNetworks(ctx, cli, f, opts.Live, &res), cleanVolumes(ctx, cli, f, opts.Live, &res))
	if opts.Images {
		errs = append(errs, cleanImages(ctx, cli, f, opts.Live, &res))
	}
	return res, errors.Join(errs...)
}

// containerLeft says why Clean leaves a container ("": it goes).
func containerLeft(id string, labels map[string]string, runs map[string]bool) string {
	owner, owned := labels[label.Owner]
	switch {
	case runs[id]:
		return LeftRun
	case owned && label.OwnerAlive(owner):
		return LeftLive
	case labels[label.Keep] == "true":
		return LeftKept
	case !owned:
		return LeftLive // made before owners were labelled: whose it is cannot be told
	}
	return ""
}

// ownerLives says whether an object's owner label, if it has one, names
// a process that may live.
func ownerLives(labels map[string]string) bool {
	owner, ok := labels[label.Owner]
	return ok && label.OwnerAlive(owner)
}

func cleanNetworks(ctx context.Context, cli Cleaner, f filters.Args, live bool, res *CleanResult) error {
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("listing mcpsandbox networks: %w", err)
	}
	var errs []error
	for _, nw := range nets {
		l := Leftover{Type: "network", ID: nw.ID, Owner: nw.Labels[label.Owner], Kind: nw.Labels[label.Kind]}
		if !live && ownerLives(nw.Labels) {
			l.Why = LeftLive
			res.Left = append(res.Left, l)
			continue
		}
		err := cli.NetworkRemove(ctx, nw.ID)
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			res.Removed[l.Type]++
		case cerrdefs.IsConflict(err), cerrdefs.IsPermissionDenied(err): // "has active endpoints"
			l.Why = LeftInUse
			res.Left = append(res.Left, l)
		default:
			errs = append(errs, fmt.Errorf("removing network %s: %w", nw.Name, err))
		}
	}
	return errors.Join(errs...)
}

func cleanVolumes(ctx context.Context, cli Cleaner, f filters.Args, live bool, res *CleanResult) error {
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("listing mcpsandbox volumes: %w", err)
	}
	var errs []error
	for _, v := range vols.Volumes {
		l := Leftover{Type: "volume", ID: v.Name, Owner: v.Labels[label.Owner], Kind: v.Labels[label.Kind]}
		if !live && ownerLives(v.Labels) {
			l.Why = LeftLive
			res.Left = append(res.Left, l)
			continue
		}
		// No force: the engine then refuses a volume a container uses.
		err := cli.VolumeRemove(ctx, v.Name, false)
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			res.Removed[l.Type]++
		case cerrdefs.IsConflict(err):
			l.Why = LeftInUse
			res.Left = append(res.Left, l)
		default:
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// cleanImages removes the images no container uses, never with force
// (force would untag an image a container uses): an image a container
// uses, or that has child images, is left. Each removal holds the cache
// lock exclusively, as an eviction does, so that an image a scan is
// making and about to hold (see pinned) is not taken from under it.
func cleanImages(ctx context.Context, cli Cleaner, f filters.Args, live bool, res *CleanResult) error {
	ims, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("listing mcpsandbox images: %w", err)
	}
	ctrs, err := cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range ctrs {
		used[c.ImageID] = true
	}
	var errs []error
	for _, im := range ims {
		l := Leftover{Type: "image", ID: im.ID, Owner: im.Labels[label.Owner], Kind: im.Labels[label.Kind]}
		switch {
		case used[im.ID]:
			l.Why = LeftInUse
		case !live && ownerLives(im.Labels):
			l.Why = LeftLive
		}
		if l.Why != "" {
			res.Left = append(res.Left, l)
			continue
		}
		err := removeImage(ctx, cli, im)
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			res.Removed[l.Type]++
		case cerrdefs.IsConflict(err): // a container made meanwhile, or child images
			l.Why = LeftRefuse
			res.Left = append(res.Left, l)
		default:
			errs = append(errs, fmt.Errorf("removing image %.19s: %w", im.ID, err))
		}
	}
	return errors.Join(errs...)
}

// removeImage removes an image without force, under the cache lock. An
// image of several tags is removed tag by tag (by id the engine would
// want force); the last one removes the image, or is refused if a
// container uses it.
func removeImage(ctx context.Context, cli Cleaner, im image.Summary) error {
	unlock, err := lockCache(ctx, cacheLockPath(), true)
	if err != nil {
		return err
	}
	defer unlock()
	refs := []string{im.ID}
	var tags []string
	for _, t := range im.RepoTags {
		if t != noneTag {
			tags = append(tags, t)
		}
	}
	if len(tags) > 1 {
		refs = tags
	}
	for _, ref := range refs {
		if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// Owners groups leftovers by their owner, for a person: "pid 1234 on this
// host (sandbox, hold)", "no owner label (sandbox)", sorted.
func Owners(left []Leftover) []string {
	kinds := map[string]map[string]bool{}
	for _, l := range left {
		who := "no owner label"
		if l.Owner != "" {
			if o, ok := label.ParseOwner(l.Owner); ok {
				who = o.String()
			} else {
				who = "owner " + l.Owner
			}
		}
		if kinds[who] == nil {
			kinds[who] = map[string]bool{}
		}
		if l.Kind != "" {
			kinds[who][l.Kind] = true
		}
	}
	var out []string
	for who, ks := range kinds {
		var names []string
		for k := range ks {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) > 0 {
			who += " (" + strings.Join(names, ", ") + ")"
		}
		out = append(out, who)
	}
	sort.Strings(out)
	return out
}
