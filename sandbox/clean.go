package sandbox

import (
	"context"
	"errors"
	"fmt"

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
		if err := removeContainer(ctx, cli, c.ID); err != nil {
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

// removeContainer force-removes a container and its anonymous volumes;
// a container that is already gone counts as removed.
func removeContainer(ctx context.Context, cli interface {
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

// CleanOptions says what Clean removes besides containers, networks and
// volumes.
type CleanOptions struct {
	Images bool
	// Keep are containers to leave: the named runs' (see RunStore), whose
	// workspace changes are in them until applied or cleaned by name.
	Keep map[string]bool
}

// Clean removes every container, network and volume labelled as
// mcpsandbox's, live or not (but those in opts.Keep), and its images when
// asked (an image a kept container uses stays: the engine refuses). It
// returns how many objects it removed.
func Clean(ctx context.Context, cli Cleaner, opts CleanOptions) (int, error) {
	f := filters.NewArgs(filters.Arg("label", label.ManagedFilter))
	n := 0
	var errs []error
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	errs = append(errs, err)
	for _, c := range cs {
		if opts.Keep[c.ID] {
			continue
		}
		if err := removeContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
		} else {
			n++
		}
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	errs = append(errs, err)
	for _, nw := range nets {
		if err := cli.NetworkRemove(ctx, nw.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", nw.Name, err))
		} else {
			n++
		}
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	errs = append(errs, err)
	for _, v := range vols.Volumes {
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
		} else {
			n++
		}
	}
	if opts.Images {
		ims, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
		errs = append(errs, err)
		for _, im := range ims {
			// No force with kept containers: it would untag what they use.
			_, err := cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: len(opts.Keep) == 0, PruneChildren: true})
			if err != nil && cerrdefs.IsConflict(err) && len(opts.Keep) > 0 {
				continue // a kept run's image
			}
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("removing image %.19s: %w", im.ID, err))
			} else {
				n++
			}
		}
	}
	return n, errors.Join(errs...)
}
