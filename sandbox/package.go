package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// DefaultPackageTarget is where the server sees --package by default.
const DefaultPackageTarget = "/package"

// hostDir is one host directory the server sees copy-on-write: the
// workspace, or the package.
type hostDir struct {
	host   string
	target string
	state  string // our directory's name in the container's layer dir
}

// The names of the mounts' state directories in the container's layer dir.
const (
	workspaceState = "mcpsandbox-ws"
	packageState   = "mcpsandbox-pkg"
)

// reservedTargets are the places a package may neither cover nor sit in:
// the kernel's filesystems, and the root.
var reservedTargets = []string{"/proc", "/sys", "/dev"}

func (o SessionOptions) packageTarget() string {
	if o.Package == "" {
		return ""
	}
	if o.PackageTarget == "" {
		return DefaultPackageTarget
	}
	return o.PackageTarget
}

// hostDirs lists the host directories the server sees copy-on-write,
// checked: each is a directory, and no target covers or sits in another
// or a --mount.
func (o SessionOptions) hostDirs() ([]hostDir, error) {
	var out []hostDir
	if o.Workspace != "" {
		out = append(out, hostDir{o.Workspace, overlay.Workspace, workspaceState})
	}
	if o.Package == "" {
		if o.PackageTarget != "" {
			return nil, &InfraError{Cause: "a package target without --package"}
		}
		return out, nil
	}
	t := o.packageTarget()
	bad := func(why string) error {
		return &InfraError{Cause: fmt.Sprintf("--package target %q %s", t, why), Fix: "give an absolute path of its own, e.g. " + DefaultPackageTarget}
	}
	if !path.IsAbs(t) || path.Clean(t) != t || t == "/" {
		return nil, bad("is not a clean absolute path below /")
	}
	others := append([]string{overlay.Workspace}, reservedTargets...)
	for _, m := range o.Mounts {
		others = append(others, path.Clean(m.Target))
	}
	for _, other := range others {
		if overlaps(t, other) {
			return nil, bad("overlaps " + other)
		}
	}
	if st, err := os.Stat(o.Package); err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("reading --package %s: %v", o.Package, err), Err: err}
	} else if !st.IsDir() {
		return nil, &InfraError{Cause: fmt.Sprintf("--package %s is not a directory", o.Package)}
	}
	return append(out, hostDir{o.Package, t, packageState}), nil
}

// overlaps reports whether one of two clean absolute paths is the other or
// below it.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// under reports whether p is below the target of one of dirs.
func under(p string, dirs []hostDir) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d.target+"/") {
			return true
		}
	}
	return false
}

// mountPointsIn makes, in a created container, the directories the mounts
// go on that its image lacks (root's, 0755, as a mount point is), before
// the baseline is taken: they are the starting state, not effects.
func mountPointsIn(ctx context.Context, cli Engine, id string, dirs []hostDir) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	n := 0
	for _, d := range dirs {
		st, err := cli.ContainerStatPath(ctx, id, d.target)
		switch {
		case err == nil && st.Mode.IsDir():
			continue
		case err == nil:
			return &InfraError{Cause: fmt.Sprintf("%s is not a directory in the image", d.target), Fix: "give --package another target"}
		case !cerrdefs.IsNotFound(err):
			return fmt.Errorf("looking for %s in the container: %w", d.target, err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d.target, "/") + "/", Mode: 0o755,
			ModTime: time.Unix(1_700_000_000, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return nil
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("making the mount points: %w", err)
	}
	return nil
}
