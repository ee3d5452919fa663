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
}

// Reap removes the containers of runs whose owning process has died: a
// runner killed with SIGKILL cannot clean up after itself, so the next one
// does. Containers of live runs, containers a user asked to keep
// (label.Keep), and anything not labelled as ours, are left alone. It
// returns the ids removed.
func Reap(ctx context.Context, cli Reaper) ([]string, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		return nil, fmt.Errorf("listing mcpsandbox containers: %w", err)
	}
	var removed []string
	var errs []error
	for _, c := range list {
		owner, ok := c.Labels[label.Owner]
		if !ok || c.Labels[label.Keep] == "true" || label.OwnerAlive(owner) {
			continue
		}
		if err := removeContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.ID)
	}
	return removed, errors.Join(errs...)
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
	Reaper
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
