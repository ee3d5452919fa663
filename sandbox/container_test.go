package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
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
	// stdin gets what is written to the container's stdin; events, in
	// order, "start", "inspect" and the first stdin write.
	stdin  chan []byte
	events []string
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
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := b.Read(buf)
			if n > 0 && f.stdin != nil {
				f.stdin <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return types.NewHijackedResponse(a, ""), nil
}

func (f *fakeEngine) ContainerStart(context.Context, string, container.StartOptions) error {
	f.events = append(f.events, "start")
	return f.startErr
}

func (f *fakeEngine) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	f.events = append(f.events, "inspect")
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &container.State{Running: true, Pid: 4242}}}, nil
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
	// The engine names the host after the container id, as for any
	// container: a name of ours would differ from the id in mountinfo.
	if c.Hostname != "" || c.Labels[label.Managed] != "true" || c.Labels[label.Run] != "r1" || c.Labels[label.Owner] == "" {
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
}

// TestStartUnderTheAgent: the agent is started as `docker run --init`
// starts docker-init, with nothing of ours on the command line or in the
// environment; AfterStart runs after the start with PID 1's host pid, and
// the config frame is the first thing on stdin, after AfterStart.
func TestStartUnderTheAgent(t *testing.T) {
	f := &fakeEngine{stdin: make(chan []byte, 16)}
	var hookPid int
	c, err := Start(context.Background(), f, ContainerOptions{Image: "img", Argv: []string{"node", "server.js"}, Env: []string{"A=1"},
		RunID: "r", Agent: true, Network: NetworkSinkhole, MaxEvents: 9,
		AfterStart: func(_ context.Context, id string, pid int) error {
			f.events = append(f.events, "hook")
			if id != "c1" {
				t.Errorf("AfterStart id %q", id)
			}
			hookPid = pid
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	cfg := f.created
	if !slices.Equal(cfg.Entrypoint, []string{agent.Path, "--"}) || !slices.Equal(cfg.Cmd, []string{"node", "server.js"}) || !slices.Equal(cfg.Env, []string{"A=1"}) {
		t.Errorf("entrypoint %q cmd %q env %q, want [%s --], the argv, the server's env alone", cfg.Entrypoint, cfg.Cmd, cfg.Env, agent.Path)
	}
	if len(f.host.Mounts) != 0 {
		t.Errorf("mounts %+v: the agent comes in the image, not a mount", f.host.Mounts)
	}
	if hookPid != 4242 || !slices.Equal(f.events, []string{"start", "inspect", "hook"}) {
		t.Errorf("AfterStart pid %d, events %v", hookPid, f.events)
	}
	var first []byte
	select {
	case first = <-f.stdin:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing written to stdin")
	}
	got, err := agent.ReadConfig(bytes.NewReader(first))
	want := agent.Config{Network: agent.ModeSinkhole, MaxEvents: 9, Tick: agentTick, Dir: "/workspace", Pin: true} // default limits: one CPU
	if err != nil || got != want {
		t.Errorf("first stdin bytes %q: config %+v, %v; want %+v", first, got, err, want)
	}
}

// TestAgentPinnedAtOneCPU: the agent is asked to keep the server on one
// CPU when the sandbox has one CPU's time or less (the default), never
// when it may use more, or has no limit.
func TestAgentPinnedAtOneCPU(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		pin  bool
	}{{0.5, true}, {1, true}, {1.5, false}, {2, false}, {0, false}} {
		f := &fakeEngine{stdin: make(chan []byte, 16)}
		c, err := Start(context.Background(), f, ContainerOptions{Image: "img", Argv: []string{"srv"}, RunID: "r",
			Agent: true, Limits: Limits{Pids: 10, MemoryMB: 64, CPUs: tc.cpus}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := agent.ReadConfig(bytes.NewReader(<-f.stdin))
		if err != nil || got.Pin != tc.pin {
			t.Errorf("--cpus %v: config %+v, %v; want pin %v", tc.cpus, got, err, tc.pin)
		}
		if err := c.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// TestAfterStartErrorRemovesTheContainer: a failing hook is an error of
// Start, and nothing is left behind.
func TestAfterStartErrorRemovesTheContainer(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeEngine{}
	_, err := Start(context.Background(), f, ContainerOptions{Image: "img", Argv: []string{"srv"}, RunID: "r",
		AfterStart: func(context.Context, string, int) error { return boom }})
	if !errors.Is(err, boom) || len(f.removed) != 1 {
		t.Errorf("err %v, removed %v", err, f.removed)
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
