package sandbox

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// AgentRepo is where agent images are tagged: a server's image plus the
// agent at agent.Path.
const AgentRepo = "mcpsandbox/agent"

// agentLayout names the agent layer's layout. It is part of every agent
// image's cache key, so that changing the layout builds new images.
const agentLayout = "mcpsandbox.agent-layer/v1"

// agentFileMode is the agent's file mode in the image: root's, executable by
// all, as Docker's own docker-init is.
const agentFileMode = 0o755

// AgentImage returns an image that is base plus one layer holding the
// agent binary bin (a host path) at agent.Path, owned by root, mode 0755.
// The agent reaches the container in the image rather than through a bind
// mount, so that no host path of ours shows in the container's mountinfo.
// The directory it goes in is the image's own: when /sbin is a link (a
// merged /usr), the file goes where the link leads, with the directory's
// owner, mode and time as the image has them; when the image has no /sbin,
// the layer makes it. Images are cached by the base's id and the binary's
// hash, labelled as mcpsandbox's (kind agent); each use is recorded for
// the cache's eviction (see Evict).
func AgentImage(ctx context.Context, cli Engine, base, bin, runID string) (ref string, err error) {
	p, err := agentImage(ctx, cli, base, bin, runID)
	if err != nil {
		return "", err
	}
	return p.Ref, p.release(context.WithoutCancel(ctx), cli)
}

// agentImage is AgentImage, with the image pinned by a hold that the
// caller releases once its container exists.
func agentImage(ctx context.Context, cli Engine, base, bin, runID string) (pin, error) {
	img, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return pin{}, imageError(base, err)
	}
	f, err := os.Open(bin)
	if err != nil {
		return pin{}, fmt.Errorf("reading the agent: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return pin{}, fmt.Errorf("reading the agent: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return pin{}, fmt.Errorf("hashing the agent %s: %w", bin, err)
	}
	key := sha256.Sum256([]byte(agentLayout + "\n" + img.ID + "\n" + hex.EncodeToString(h.Sum(nil))))
	ref := AgentRepo + ":" + hex.EncodeToString(key[:])[:12]
	return pinned(ctx, cli, ref, runID, func() error { return buildAgentImage(ctx, cli, img, f, fi.Size(), ref, runID) })
}

// buildAgentImage makes the agent image ref: img plus the agent (the
// size bytes of f) in the image's own directory.
func buildAgentImage(ctx context.Context, cli Engine, img image.InspectResponse, f *os.File, size int64, ref, runID string) (err error) {
	entry, dir, err := agentDir(ctx, cli, img, runID)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "mcpsandbox-agent-*.tar")
	if err != nil {
		return fmt.Errorf("creating the agent layer: %w", err)
	}
	defer func() { err = errors.Join(err, tmp.Close(), os.Remove(tmp.Name())) }()
	tw := tar.NewWriter(tmp)
	if err := tw.WriteHeader(entry); err != nil {
		return fmt.Errorf("writing the agent layer: %w", err)
	}
	// The file's time is its directory's: what adding it to the directory
	// would have left.
	file := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(path.Join(dir, path.Base(agent.Path)), "/"), Mode: agentFileMode,
		Size: size, ModTime: entry.ModTime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(file); err != nil {
		return fmt.Errorf("writing the agent layer: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the agent: %w", err)
	}
	if _, err := io.CopyN(tw, f, size); err != nil {
		return fmt.Errorf("writing the agent layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the agent layer: %w", err)
	}
	return loadLayerImage(ctx, cli, img, tmp, ref, label.Set(runID, map[string]string{label.Kind: KindAgent}), "mcpsandbox agent")
}

// agentDir finds where agent.Path really is in image img: the directory
// the agent goes in (dir, absolute, links resolved) and the entry the
// layer needs for it: the image's own, so that the layer leaves its owner,
// mode and time as they were, or a new /sbin (root's, 0755, made when the
// image was) when the image has none. It looks through a container that
// is created and never started.
func agentDir(ctx context.Context, cli Engine, img image.InspectResponse, runID string) (entry *tar.Header, dir string, err error) {
	cctx, cancel := createContext(ctx)
	defer cancel()
	created, err := cli.ContainerCreate(cctx, &container.Config{
		Image: img.ID, Entrypoint: []string{agent.Path}, Cmd: []string{},
		Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: "agent"}),
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return nil, "", fmt.Errorf("creating a container to look into %.19s: %w", img.ID, err)
	}
	defer func() { err = errors.Join(err, RemoveContainer(context.WithoutCancel(ctx), cli, created.ID)) }()

	want := path.Dir(agent.Path)
	st, err := cli.ContainerStatPath(ctx, created.ID, want)
	switch {
	case cerrdefs.IsNotFound(err):
		made, err := time.Parse(time.RFC3339Nano, img.Created)
		if err != nil {
			made = time.Unix(0, 0)
		}
		return &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(want, "/") + "/", Mode: 0o755,
			ModTime: made.Truncate(time.Second), Format: tar.FormatPAX}, want, nil
	case err != nil:
		return nil, "", fmt.Errorf("looking for %s in %.19s: %w", want, img.ID, err)
	}
	dir = want
	if st.Mode&fs.ModeSymlink != 0 {
		// The engine gives the link's target fully resolved in the
		// container's root.
		dir = st.LinkTarget
		if st, err = cli.ContainerStatPath(ctx, created.ID, dir); err != nil {
			return nil, "", &InfraError{Cause: fmt.Sprintf("%s in image %s is a link to %s, which is not there: %v", want, img.ID, dir, err),
				Fix: "run with --no-agent", Err: err}
		}
	}
	if !st.Mode.IsDir() {
		return nil, "", &InfraError{Cause: fmt.Sprintf("%s in image %s is not a directory (%s)", dir, img.ID, st.Mode), Fix: "run with --no-agent"}
	}
	hdr, err := dirHeader(ctx, cli, created.ID, dir)
	if err != nil {
		return nil, "", err
	}
	return hdr, dir, nil
}

// dirHeader returns the tar entry of directory dir in the container as
// the engine archives it (owner, mode, time), named for the layer.
func dirHeader(ctx context.Context, cli Engine, id, dir string) (*tar.Header, error) {
	rc, _, err := cli.CopyFromContainer(ctx, id, dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s from the image: %w", dir, err)
	}
	// Only the first entry is read; closing stops the rest of the archive.
	defer rc.Close()
	hdr, err := tar.NewReader(rc).Next()
	if err != nil {
		return nil, fmt.Errorf("reading %s from the image: %w", dir, err)
	}
	if hdr.Typeflag != tar.TypeDir {
		return nil, fmt.Errorf("reading %s from the image: its first entry is %q, not the directory", dir, hdr.Name)
	}
	return &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: hdr.Mode, Uid: hdr.Uid, Gid: hdr.Gid,
		ModTime: hdr.ModTime, Format: tar.FormatPAX}, nil
}

// ErrImageNotFound marks an image that is not in the local engine:
// mcpsandbox never pulls one.
var ErrImageNotFound = errors.New("image not in the local engine")

// imageError says that image is missing from the local engine (and how to
// get it; the error wraps ErrImageNotFound), or that inspecting it failed.
func imageError(ref string, err error) error {
	if cerrdefs.IsNotFound(err) {
		fix := "build it with `mcpsandbox images build`"
		if !strings.HasPrefix(ref, "mcpsandbox/") {
			fix = "pull, load or build it into the local engine first (mcpsandbox never pulls)"
		}
		return &InfraError{Cause: fmt.Sprintf("image %s is not in the local Docker engine", ref), Fix: fix, Err: fmt.Errorf("%w: %w", ErrImageNotFound, err)}
	}
	return &InfraError{Cause: fmt.Sprintf("inspecting image %s: %v", ref, err), Err: err}
}
