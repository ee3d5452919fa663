package sandbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// sandboxHome is the sandbox user's home in the host-built images
// (images/base/manifest), where the bait's home files are planted.
const sandboxHome = "/home/sandbox"

// layoutDir is a directory the sandbox gives the server where its image
// has none.
type layoutDir struct {
	path     string
	mode     int64
	uid, gid int
}

// layoutDirs are the directories of the host-built images that a scan
// relies on, parents first: the workspace and the sandbox user's home
// (the bait's places), the sandbox user's; /tmp, everyone's and sticky,
// which most programs take for granted. An image FROM scratch has none.
func layoutDirs() []layoutDir {
	return []layoutDir{
		{overlay.Workspace, 0o755, images.UID, images.GID},
		{"/home", 0o755, 0, 0},
		{sandboxHome, 0o755, images.UID, images.GID},
		{"/tmp", 0o1777, 0, 0},
	}
}

// maxPasswd bounds what of the image's /etc/passwd is read.
const maxPasswd = 1 << 20

// layout makes, in the created container id, the layoutDirs its image
// lacks, before the baseline (they are no effect of the server's), and
// finds the server's HOME: where neither the environment nor the image's
// /etc/passwd gives the user a home, the engine says "/", and the agent
// is told the sandbox home instead, where the bait is (without the agent
// HOME stays "/").
func (s *Session) layout(ctx context.Context, id string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	made := time.Now().Truncate(time.Second)
	n := 0
	for _, d := range layoutDirs() {
		_, err := s.cli.ContainerStatPath(ctx, id, d.path)
		switch {
		case cerrdefs.IsNotFound(err):
		case err != nil:
			return &InfraError{Cause: fmt.Sprintf("looking for %s in the container: %v", d.path, err), Err: err}
		default:
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d.path, "/") + "/", Mode: d.mode,
			Uid: d.uid, Gid: d.gid, ModTime: made, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("writing the sandbox's directories: %w", err)
		}
		n++
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the sandbox's directories: %w", err)
	}
	if n > 0 {
		if err := s.cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
			return &InfraError{Cause: fmt.Sprintf("making the sandbox's directories: %v", err), Err: err}
		}
	}
	if s.opts.Agent == "" {
		return nil
	}
	home, err := s.homeless(ctx, id)
	if err != nil {
		return err
	}
	if home {
		s.home = sandboxHome
	}
	return nil
}

// homeless says whether the engine gives the server no home: HOME is not
// in the container's environment and the image's /etc/passwd (if any)
// has no entry for the user's uid.
func (s *Session) homeless(ctx context.Context, id string) (bool, error) {
	in, err := s.cli.ContainerInspect(ctx, id)
	if err != nil {
		return false, &InfraError{Cause: fmt.Sprintf("inspecting the created container: %v", err), Err: err}
	}
	if in.Config != nil {
		for _, e := range in.Config.Env {
			if strings.HasPrefix(e, "HOME=") {
				return false, nil
			}
		}
	}
	rc, _, err := s.cli.CopyFromContainer(ctx, id, "/etc/passwd")
	switch {
	case cerrdefs.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, &InfraError{Cause: fmt.Sprintf("reading the image's /etc/passwd: %v", err), Err: err}
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil || hdr.Typeflag != tar.TypeReg {
		// A link, or something unreadable: the image's own affair.
		return false, nil
	}
	uid, _, _ := strings.Cut(s.opts.User, ":")
	return !passwdHas(io.LimitReader(tr, maxPasswd), uid), nil
}

// passwdHas says whether the passwd file r has an entry for uid.
func passwdHas(r io.Reader, uid string) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxPasswd)
	for sc.Scan() {
		if f := strings.Split(sc.Text(), ":"); len(f) >= 6 && f[2] == uid {
			return true
		}
	}
	return false
}
