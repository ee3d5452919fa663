package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Engine is the part of the Docker Engine API that running a sandbox uses.
type Engine interface {
	ImageInspect(ctx context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerKill(ctx context.Context, containerID, signal string) error
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	ContainerCommit(ctx context.Context, containerID string, options container.CommitOptions) (container.CommitResponse, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error)
	// For the API change source.
	ContainerDiff(ctx context.Context, containerID string) ([]container.FilesystemChange, error)
	ContainerStatPath(ctx context.Context, containerID, path string) (container.PathStat, error)
	CopyFromContainer(ctx context.Context, containerID, srcPath string) (io.ReadCloser, container.PathStat, error)
}

// Mount is a host path made visible, read-only, inside the container.
type Mount struct {
	Source string // host path
	Target string // container path
}

// Limits bound what the server may use.
type Limits struct {
	Pids     int64   // max processes
	MemoryMB int64   // memory (and memory+swap)
	CPUs     float64 // CPU share
}

// ErrReservedEnv marks a server's environment naming a variable the
// sandbox's agent reserves.
var ErrReservedEnv = errors.New("a reserved variable in the server's environment")

// DefaultLimits are the limits of a sandbox unless told otherwise.
func DefaultLimits() Limits { return Limits{Pids: 256, MemoryMB: 1024, CPUs: 1} }

// ContainerOptions configures a sandbox container.
type ContainerOptions struct {
	Image   string
	Argv    []string    // no shell: argv[0] is run as is
	Env     []string    // KEY=VAL
	User    string      // default images.User()
	Network NetworkMode // default NetworkNone
	Mounts  []Mount
	Limits  Limits
	RunID   string
	// StderrLimit bounds the stderr tail kept (default 64 KiB).
	StderrLimit int
	// Secrets, when set, names the planted secrets in data: the whole
	// stderr stream is looked through with it (see StderrSecrets).
	Secrets func(data string) []string
	// Agent says that the image holds the agent at agent.Path (see
	// AgentImage). It then runs as PID 1, as `docker run --init` runs
	// docker-init (/proc/1/cmdline reads "/sbin/docker-init -- ARGV"), takes
	// its config on stdin, and starts the server under it; its events are
	// read from stderr.
	Agent bool
	// WorkingDir is the server's working directory (default /workspace).
	WorkingDir string
	// Home, if set, is asked for the server's HOME when the agent's
	// config is written (after BeforeStart): non-empty replaces the
	// engine's (see agent.Config.Home). Only the agent can apply it.
	Home func() string
	// MaxEvents bounds the agent events held before they are taken.
	MaxEvents int
	// ShmSize is the size of the container's /dev/shm (default the
	// engine's, 64 MiB).
	ShmSize int64
	// ExtraHosts are "name:ip" lines added to the container's /etc/hosts
	// (the allowed hosts' addresses, see allowhost.go).
	ExtraHosts []string
	// BeforeStart, if set, runs once the container exists and before it
	// starts: to seed files, and to snapshot its state before the server.
	BeforeStart func(ctx context.Context, id string) error
	// AfterStart, if set, runs once the container has started and before
	// anything is written to its stdin (the agent's config first, so the
	// server has not started yet under the agent): to change what the
	// container sees, in its namespaces. pid is its PID 1 on the host
	// (ContainerInspect's State.Pid; 0 if it has already ended).
	AfterStart func(ctx context.Context, id string, pid int) error
	// LostWait bounds the wait, once the container has ended, for the
	// engine's event of its end (default DefaultLostWait; see
	// Container.Lost).
	LostWait time.Duration
	// created, if set, is told the container's id once it exists and
	// before anything else is done with it (a test's seam: a signal
	// between create and start).
	created func(id string)
	// tick is the agent's heartbeat (zero: agentTick), and noFlush keeps
	// the runner from asking the agent for ticks (see agentFlusher): tests
	// make a mark depend on the one or the other.
	tick    time.Duration
	noFlush bool
	// keep sets label.Keep, so that neither the reaper nor cache eviction
	// removes a container kept for debugging, nor its image (clean removes
	// them); the owner label stays, so that the reaper stops it should its
	// runner die with the server still running.
	keep bool
}

// Container is a running sandbox with its stdio.
type Container struct {
	ID string

	cli    Engine
	attach types.HijackedResponse
	stdout *elasticPipe
	stderr *tailBuffer
	events *eventStore
	life   *lifeWatch // what others did to the container (see Lost)
	demux  chan error // the demultiplexer's end
	// drained is closed once the attach stream ended and every stderr
	// byte has reached the tail: the container has exited.
	drained chan struct{}

	// agent is set when the agent runs as PID 1; agentEnded once its last
	// frame (agent.KindEnd) arrived, agentRaw once it wrote bytes that are
	// no frame (its own crash output): an agent that ended with neither
	// was killed from outside (see Lost).
	agent      bool
	agentEnded atomic.Bool
	agentRaw   atomic.Bool
	// flusher asks the agent for a tick at each mark (nil: the runner
	// cannot signal it, and marks wait for its heartbeat).
	flusher *agentFlusher

	// removeTimeout bounds its removal (zero: the package's
	// removeTimeout); tests make it small.
	removeTimeout time.Duration
	closeOnce     sync.Once
	closeErr      error
}

// Start creates, attaches to and starts a container. On error nothing is
// left behind: the container is removed before Start returns.
func Start(ctx context.Context, cli Engine, opts ContainerOptions) (_ *Container, err error) {
	for _, e := range opts.Env {
		if k, _, _ := strings.Cut(e, "="); k == agent.ChildEnv {
			return nil, fmt.Errorf("%w: the variable %s is the agent's own", ErrReservedEnv, k)
		}
	}
	if opts.User == "" {
		opts.User = images.User()
	}
	if opts.Network == 0 {
		opts.Network = NetworkNone
	}
	if opts.MaxEvents == 0 {
		opts.MaxEvents = 100_000
	}
	if opts.WorkingDir == "" {
		opts.WorkingDir = overlay.Workspace
	}
	dockerNet, agentMode := opts.Network.String(), agent.ModeOpen
	switch opts.Network {
	case NetworkNone:
		agentMode = agent.ModeNone
	case NetworkSinkhole:
		dockerNet, agentMode = NetworkNone.String(), agent.ModeSinkhole
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	if opts.StderrLimit == 0 {
		opts.StderrLimit = 64 << 10
	}
	if len(opts.Argv) == 0 {
		return nil, errors.New("no server command given")
	}
	if _, err := cli.ImageInspect(ctx, opts.Image); err != nil {
		return nil, imageError(opts.Image, err)
	}
	profile, err := seccompProfile(opts.Agent)
	if err != nil {
		return nil, err
	}

	pids := opts.Limits.Pids
	cfg := &container.Config{
		Image:      opts.Image,
		Entrypoint: []string{},
		Cmd:        opts.Argv,
		Env:        opts.Env,
		User:       opts.User,
		WorkingDir: opts.WorkingDir,
		// No Hostname: the engine names the host after the container id,
		// as it does every container's, and mountinfo shows that id.
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Labels:       label.Set(opts.RunID, map[string]string{label.Kind: "sandbox"}),
	}
	cfg.Labels[label.Owner] = label.SelfOwner()
	if opts.keep {
		cfg.Labels[label.Keep] = "true"
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(dockerNet),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + profile},
		Init:           nil,
		ReadonlyRootfs: false,
		ShmSize:        opts.ShmSize,
		ExtraHosts:     opts.ExtraHosts,
		// The server's stdout and stderr are read through the attach
		// stream; a log would be a file on the host it could grow
		// without bound.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			PidsLimit:  &pids,
			Memory:     opts.Limits.MemoryMB << 20,
			MemorySwap: opts.Limits.MemoryMB << 20,
			NanoCPUs:   int64(opts.Limits.CPUs * 1e9),
		},
	}
	for _, m := range opts.Mounts {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: true})
	}
	if opts.Agent {
		// Nothing on the command line but what `docker run --init` puts
		// there: the agent's settings come on stdin, after the start.
		cfg.Entrypoint = []string{agent.Path, "--"}
		if dockerNet == NetworkNone.String() {
			// DNS goes to the agent's sink on the loopback, which may bind
			// port 53 without a capability.
			host.DNS = []string{"127.0.0.1"}
			host.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
		}
	}
	// Created whatever ctx says, so that its id is known and it is removed:
	// a create cut off by a signal may still leave a container behind.
	since := time.Now()
	createCtx, cancelCreate := createContext(ctx)
	created, err := cli.ContainerCreate(createCtx, cfg, host, nil, nil, "")
	cancelCreate()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("creating the container: %w", context.Cause(ctx))
		}
		return nil, &InfraError{Cause: fmt.Sprintf("creating the container: %v", err), Err: err}
	}
	c := &Container{ID: created.ID, cli: cli, stderr: &tailBuffer{max: opts.StderrLimit, find: opts.Secrets}, events: newEventStore(opts.MaxEvents),
		life: newLifeWatch(opts.LostWait), demux: make(chan error, 1), drained: make(chan struct{}), agent: opts.Agent}
	// Registered before anything else can fail: the container goes away on
	// every error path from here on.
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
		}
	}()
	c.life.watch(ctx, cli, c.ID, since)
	if opts.created != nil {
		opts.created(c.ID)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("starting the container: %w", context.Cause(ctx))
	}

	c.attach, err = cli.ContainerAttach(ctx, c.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("attaching to the container: %v", err), Err: err}
	}
	c.stdout = newElasticPipe(stdoutBuffer)
	er, ew := io.Pipe()
	decoded := make(chan struct{})
	go func() {
		// The agent's frames become events; the server's stderr (inside
		// frames, or raw without an agent) goes to the bounded tail.
		agent.Decode(er, func(e agent.Event) {
			switch e.Kind {
			case agent.KindStderr:
				c.stderr.Write(append([]byte(e.Data), e.Payload...))
				return
			case agent.KindEnd:
				// The agent's own word that it ends: only the agent writes
				// frames (see agent.Decode), so the server cannot send it.
				c.agentEnded.Store(true)
				return
			}
			c.events.add(e)
		}, func(b []byte) {
			c.agentRaw.Store(true)
			c.stderr.Write(b)
		})
		io.Copy(io.Discard, er)
		c.events.end()
		close(decoded)
	}()
	go func() {
		_, err := stdcopy.StdCopy(c.stdout, ew, c.attach.Reader)
		c.stdout.CloseWithError(err) // nil: EOF for the reader
		ew.Close()
		<-decoded
		close(c.drained)
		c.demux <- err
	}()
	if opts.BeforeStart != nil {
		if err := opts.BeforeStart(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting the container: %w", context.Cause(ctx))
		}
		return nil, startError(opts, err)
	}
	// Its start, as the engine tells it: a later start is someone else's.
	in, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return nil, &InfraError{Cause: fmt.Sprintf("inspecting the started container: %v", err), Err: err}
	}
	pid := 0
	if in.State != nil {
		pid = in.State.Pid
		c.life.start(in.State.StartedAt)
	}
	if opts.AfterStart != nil {
		if err := opts.AfterStart(ctx, c.ID, pid); err != nil {
			return nil, err
		}
	}
	if opts.Agent {
		if pid != 0 && !opts.noFlush {
			// Without it (an engine on another host, a runner without the
			// privilege to signal the container's processes) marks wait for
			// the heartbeat: slower, as complete.
			if f, err := openFlusher(pid); err == nil {
				c.flusher = f
				c.events.flush, c.events.quiet = f.flush, f.quiet
			}
		}
		// The first bytes on stdin: the agent reads this frame, then hands
		// stdin, untouched, to the server.
		conf := agent.Config{Network: agentMode, MaxEvents: opts.MaxEvents, Tick: cmp.Or(opts.tick, agentTick), Dir: opts.WorkingDir,
			Pin: opts.Limits.CPUs > 0 && opts.Limits.CPUs <= 1, Flush: c.flusher != nil, Quiet: c.flusher != nil}
		if opts.Home != nil {
			conf.Home = opts.Home()
		}
		if err := agent.WriteConfig(c.Stdin(), conf); err != nil {
			return nil, &InfraError{Cause: fmt.Sprintf("sending the agent its config: %v", err), Err: err}
		}
	}
	return c, nil
}

// agentTick is the agent's heartbeat: a phase closes once a tick later
// than its end has arrived.
const agentTick = 10 * time.Millisecond

// startError turns the engine's start failure into a message that names
// the cause: most often a command that is not in the image.
func startError(opts ContainerOptions, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file or directory") {
		return &InfraError{Cause: fmt.Sprintf("the server command %q is not found in image %s", opts.Argv[0], opts.Image),
			Fix: "check the command, or mount it with --mount", Err: err}
	}
	if strings.Contains(msg, "permission denied") {
		return &InfraError{Cause: fmt.Sprintf("the server command %q cannot be executed in image %s", opts.Argv[0], opts.Image),
			Fix: "check that it is executable by the sandbox user " + images.User(), Err: err}
	}
	return &InfraError{Cause: fmt.Sprintf("starting the container: %v", err), Err: err}
}

// removeTimeout bounds removing a container, in a teardown within the
// run's --timeout (past it, TeardownGrace does); an engine under load
// (other scans, every CPU busy) has been seen to take over 30 s.
const removeTimeout = 2 * time.Minute

// TeardownGrace bounds a session's teardown past the run's deadline
// (--timeout): its engine calls (the server's state, its kill, the last
// snapshot, the container's removal) are cut at the deadline plus
// TeardownGrace, so that a run ends within a few seconds of --timeout
// whatever the engine takes (removing a container of 200,000 files has
// taken it 20 s on a loaded machine). A removal still under way then is
// not waited for once the engine has the request: the engine goes on with
// it whatever becomes of the request (dockerd's removal takes no context),
// and the report says so (a teardown problem). Should the engine not
// finish it, the next run's reaper removes the container: its owner, this
// runner, is gone by then.
const TeardownGrace = 2 * time.Second

// removeSendWait is how long, past the teardown's bound, a removal whose
// request has not reached the engine yet is waited for before the report
// says that it was slow to go (it is still waited for, up to the
// removal's own bound: a request never sent would leave the container
// running until the next run's reaper, which is worse than a teardown
// that overruns --timeout and says by how much, timing.overrunMs).
const removeSendWait = time.Second

// stdoutBuffer bounds the server's stdout held before the runner reads it
// (see elasticPipe).
const stdoutBuffer = 16 << 20

// Stdout is the server's stdout, demultiplexed from the attach stream.
func (c *Container) Stdout() io.Reader { return c.stdout }

// Stdin writes to the server's stdin; closing it sends EOF.
func (c *Container) Stdin() io.WriteCloser { return stdinCloser{c} }

type stdinCloser struct{ c *Container }

// Write gives up after stdinTimeout: a server that stops reading its stdin
// must not block the runner forever (go-sdk checks its context only before
// a write starts).
func (s stdinCloser) Write(p []byte) (int, error) {
	s.c.attach.Conn.SetWriteDeadline(time.Now().Add(stdinTimeout))
	return s.c.attach.Conn.Write(p)
}

// stdinTimeout bounds one write to the server's stdin.
const stdinTimeout = 30 * time.Second

func (s stdinCloser) Close() error { return s.c.attach.CloseWrite() }

// Stderr returns the tail of what the server wrote to stderr, the total
// number of bytes it wrote, and whether the tail is truncated.
func (c *Container) Stderr() (tail string, total int64, truncated bool) { return c.stderr.snapshot() }

// StderrSecrets names the planted secrets (ContainerOptions.Secrets) found
// anywhere in what the server wrote to stderr, sorted.
func (c *Container) StderrSecrets() []string { return c.stderr.secrets() }

// StderrHead returns the start of what the server wrote to stderr (the
// first stderrHeadLimit bytes).
func (c *Container) StderrHead() string { return c.stderr.start() }

// Exited waits, at most wait, for the container to end and its output to
// drain; it returns its state and whether it has ended.
func (c *Container) Exited(ctx context.Context, wait time.Duration) (State, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.drained:
	case <-t.C:
	case <-ctx.Done():
	}
	st, err := c.State(ctx)
	return st, err == nil && !st.Running
}

// awaitExit waits, until the deadline, for the container to end: at the
// end of its output (an agent holds its stderr until it exits) or the
// engine's event of its end, each confirmed by an inspection; between
// them, an inspection every exitPoll, or exitPollUnwatched when the
// engine's events are not read.
func (c *Container) awaitExit(ctx context.Context, until time.Time) {
	if !time.Now().Before(until) {
		return
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	drained, died := c.drained, c.life.died
	for {
		if st, err := c.State(ctx); err != nil || !st.Running {
			return
		}
		poll := exitPoll
		if !c.life.watching() {
			poll = exitPollUnwatched
		}
		p := time.NewTimer(poll)
		select {
		case <-drained:
			drained = nil // a server without the agent may close its stdio and run on
		case <-died:
			died = nil // inspected once more; both channels stay closed
		case <-p.C:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
		p.Stop()
	}
}

// The inspections of awaitExit while nothing else says the container
// ended: a backstop where the engine's events are read (their stream may
// end), the only sign where they are not.
const (
	exitPoll          = 250 * time.Millisecond
	exitPollUnwatched = 20 * time.Millisecond
)

// State is how the container ended, or that it still runs.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Error     string
}

// State inspects the container.
func (c *Container) State(ctx context.Context) (State, error) {
	in, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return State{}, fmt.Errorf("inspecting container %.12s: %w", c.ID, err)
	}
	if in.State == nil {
		return State{}, nil
	}
	return State{Running: in.State.Running, ExitCode: in.State.ExitCode, OOMKilled: in.State.OOMKilled, Error: in.State.Error}, nil
}

// Stop kills the server (if it still runs) and waits, bounded, until the
// output streams have drained, so that its last stderr lines are kept.
func (c *Container) Stop(ctx context.Context) error {
	c.life.ask()
	err := c.cli.ContainerKill(ctx, c.ID, "KILL")
	if err != nil && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "is not running")) {
		err = nil
	}
	select {
	case <-c.demux:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	if err != nil {
		return fmt.Errorf("killing container %.12s: %w", c.ID, err)
	}
	return nil
}

// Close removes the container with everything in it, whatever ctx says
// (the removal is bounded by removeTimeout). It is idempotent and safe on
// a partly started container; a container already gone counts as
// removed.
func (c *Container) Close(ctx context.Context) error { return c.closeBy(ctx, time.Time{}) }

// closeBy is Close, except that the runner stops waiting for the removal
// at until (zero: no such bound) once the engine has the request: it then
// returns a *removalLeft (see TeardownGrace).
func (c *Container) closeBy(ctx context.Context, until time.Time) error {
	c.closeOnce.Do(func() {
		c.life.ask()
		timeout := c.removeTimeout
		if timeout == 0 {
			timeout = removeTimeout
		}
		c.closeErr = removeBy(ctx, c.cli, c.ID, until, timeout)
		c.life.stop()
		if c.flusher != nil {
			c.flusher.close()
		}
		if c.attach.Conn != nil {
			c.attach.Close()
		}
		if c.stdout != nil {
			c.stdout.Close()
		}
	})
	return c.closeErr
}

// removeBy removes container id as removeContainer does, whatever ctx
// says, waiting for the engine at most timeout. With until set, the
// runner stops waiting at until once the request has been written to the
// engine (however late that is, within timeout), and returns a
// *removalLeft that keeps what the request ended with and how late it
// went.
func removeBy(ctx context.Context, cli interface {
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
}, id string, until time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var sentAt atomic.Int64 // unix nanoseconds the request was written at
	if !until.IsZero() {
		wrote := make(chan struct{}) // closed once the request is written
		var once sync.Once
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				once.Do(func() {
					sentAt.Store(time.Now().UnixNano())
					close(wrote)
				})
			}
		}})
		go stopWaiting(ctx, until, wrote, stop)
	}
	err := RemoveContainer(ctx, cli, id)
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errStoppedWaiting):
		left := &removalLeft{err: err}
		if at := time.Unix(0, sentAt.Load()); at.After(until) {
			left.late = at.Sub(until)
		}
		return left
	case ctx.Err() != nil:
		// Said as what it is, not only the client's "context deadline
		// exceeded": the container may still be there.
		return fmt.Errorf("%w (the engine did not answer within %s: it may go on with the removal; if it does not, the next run's reaper removes the container)", err, timeout)
	}
	return err
}

// stopWaiting stops a removal's wait at until once its request is
// written (wrote): a request not yet written is waited for, as the
// container would otherwise be left running.
func stopWaiting(ctx context.Context, until time.Time, wrote <-chan struct{}, stop context.CancelCauseFunc) {
	at := time.NewTimer(time.Until(until))
	defer at.Stop()
	select {
	case <-at.C:
	case <-ctx.Done():
		return
	}
	select {
	case <-wrote:
	case <-ctx.Done():
		return
	}
	stop(errStoppedWaiting)
}

// errStoppedWaiting is the cause of a removal's context that the runner
// stopped waiting for (see removeBy).
var errStoppedWaiting = errors.New("the runner stopped waiting at the teardown's bound")

// removalLeft is a removal the runner stopped waiting for at the
// teardown's bound, past the run's deadline, once the engine had the
// request: a note, not a failure.
type removalLeft struct {
	// late is how long past the teardown's bound the request was written
	// (zero: before it); past removeSendWait the note says so.
	late time.Duration
	err  error // what the request ended with
}

func (e *removalLeft) Error() string {
	msg := fmt.Sprintf("the container's removal was not waited for past --timeout and %s of teardown: the engine has the request and goes on with it; should it not finish, the next run's reaper removes the container (%v)", TeardownGrace, e.err)
	if e.late > removeSendWait {
		msg += fmt.Sprintf("; the request reached the engine only %s past that bound (a loaded engine), which the run's overrun includes", e.late.Round(time.Millisecond))
	}
	return msg
}

func (e *removalLeft) Unwrap() error { return e.err }

// release gives up the container without removing it (for --keep).
func (c *Container) release() {
	c.closeOnce.Do(func() {
		c.life.ask()
		c.life.stop()
		if c.attach.Conn != nil {
			c.attach.Close()
		}
	})
}
