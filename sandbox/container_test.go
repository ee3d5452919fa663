package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// fakeEngine fails where told and records removals; calls it does not
// override panic through the nil embedded interface.
type fakeEngine struct {
	Engine
	attachErr, startErr, removeErr error
	created                        *container.Config
	host                           *container.HostConfig
	removed                        []string
}

func (f *fakeEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{ID: "sha256:img"}, nil
}

func (f *fakeEngine) ContainerCreate(_ context.Context, c *container.Config, h *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, _ string) (container.CreateResponse, error) {
	f.created, f.host = c, h
	return container.CreateResponse{ID: "c1"}, nil
}

func (f *fakeEngine) ContainerAttach(context.Context, string, container.AttachOptions) (types.HijackedResponse, error) {
	if f.attachErr != nil {
		return types.HijackedResponse{}, f.attachErr
	}
	a, b := net.Pipe()
	go func() { io.Copy(io.Discard, b) }()
	return types.NewHijackedResponse(a, ""), nil
}

func (f *fakeEngine) ContainerStart(context.Context, string, container.StartOptions) error {
	return f.startErr
}

func (f *fakeEngine) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.removed = append(f.removed, id)
	return f.removeErr
}

func TestStartRemovesContainerOnEveryFailure(t *testing.T) {
	boom := errors.New("boom")
	for name, f := range map[string]*fakeEngine{
		"attach":         {attachErr: boom},
		"start":          {startErr: boom},
		"start+remove":   {startErr: boom, removeErr: errors.New("engine gone")},
		"command absent": {startErr: errors.New(`OCI runtime create failed: exec: "/x": stat /x: no such file or directory`)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), f, ContainerOptions{Image: "img", Argv: []string{"/x"}, RunID: "r"})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if len(f.removed) != 1 || f.removed[0] != "c1" {
				t.Errorf("removed %v, want [c1]", f.removed)
			}
			if f.removeErr != nil && !strings.Contains(err.Error(), "engine gone") {
				t.Errorf("the removal error was thrown away: %v", err)
			}
			var ie *InfraError
			if !errors.As(err, &ie) {
				t.Errorf("err %v is not an InfraError", err)
			}
			if name == "command absent" && !strings.Contains(err.Error(), `"/x" is not found`) {
				t.Errorf("err %q does not name the missing command", err)
			}
		})
	}
}

func TestStartHardensByDefault(t *testing.T) {
	f := &fakeEngine{startErr: errors.New("stop here")}
	Start(context.Background(), f, ContainerOptions{Image: "img", Argv: []string{"srv"}, RunID: "r1",
		Mounts: []Mount{{Source: "/host/code", Target: "/opt/code"}}})
	c, h := f.created, f.host
	if c.User != "10001:10001" || c.WorkingDir != "/workspace" || len(c.Entrypoint) != 0 || c.Cmd[0] != "srv" {
		t.Errorf("config = %+v", c)
	}
	if c.Hostname == "" || c.Labels[label.Managed] != "true" || c.Labels[label.Run] != "r1" || c.Labels[label.Owner] == "" {
		t.Errorf("hostname %q labels %v", c.Hostname, c.Labels)
	}
	if h.NetworkMode != "none" || len(h.CapDrop) != 1 || h.CapDrop[0] != "ALL" || len(h.SecurityOpt) != 2 ||
		h.SecurityOpt[0] != "no-new-privileges" || !strings.HasPrefix(h.SecurityOpt[1], "seccomp={") {
		t.Errorf("host config = %+v", h)
	}
	if h.PidsLimit == nil || *h.PidsLimit <= 0 || h.Memory <= 0 || h.NanoCPUs <= 0 {
		t.Errorf("limits = %+v", h.Resources)
	}
	if len(h.Mounts) != 1 || !h.Mounts[0].ReadOnly {
		t.Errorf("mounts = %+v, want read-only", h.Mounts)
	}
	f2 := &fakeEngine{startErr: errors.New("stop here")}
	Start(context.Background(), f2, ContainerOptions{Image: "img", Argv: []string{"srv"}})
	if f2.created.Hostname == c.Hostname {
		t.Errorf("hostname %q is not random", c.Hostname)
	}
}

func TestCloseIsIdempotentAndNotFoundIsSuccess(t *testing.T) {
	f := &fakeEngine{removeErr: notFound{}}
	c := &Container{ID: "gone", cli: f}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close of a vanished container: %v", err)
	}
	if err := c.Close(context.Background()); err != nil || len(f.removed) != 1 {
		t.Fatalf("second Close: %v, removals %d", err, len(f.removed))
	}
}

type notFound struct{}

func (notFound) Error() string { return "No such container: gone" }
func (notFound) NotFound()     {}

func TestTailBufferBounds(t *testing.T) {
	b := newTailBuffer(8)
	io.WriteString(b, "hello ")
	io.WriteString(b, "world, and more")
	io.WriteString(b, "!")
	tail, total, trunc := b.snapshot()
	if tail != "nd more!" || total != 22 || !trunc {
		t.Errorf("tail %q total %d truncated %v", tail, total, trunc)
	}
}
