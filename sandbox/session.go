package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// SessionOptions configures one server in one sandbox.
type SessionOptions struct {
	Image string
	// Argv is the server's command; empty runs the image's own entrypoint
	// and command, in its working directory.
	Argv   []string
	Env    []string
	Mounts []Mount
	// Workspace is a host directory the server sees at /workspace; it is
	// never modified. Empty means a fresh empty workspace.
	Workspace string
	// Package is a host directory (the server's code) the server sees at
	// PackageTarget (default DefaultPackageTarget) as it sees the
	// workspace: writable, copy-on-write, never modified, its changes
	// file effects.
	Package, PackageTarget string
	// Source, if set, is the registry package Package holds, as a
	// launcher line named it (for the report's server.package).
	Source *report.PackageSource
	// ImageEntrypoint and ImageArgs, with no Argv, are a docker run
	// line's --entrypoint and the arguments after its image: they replace
	// the image's entrypoint (and command) and its command, as docker's.
	ImageEntrypoint, ImageArgs []string
	// PackageIsWorkspace says the package is the workspace seen at its
	// host path (run --same-path): a named run records it as the
	// workspace, and its changes are the workspace's to list and apply.
	PackageIsWorkspace bool
	// CopyWorkspace copies the workspace and the package into image layers
	// even where they could be mounted copy-on-write.
	CopyWorkspace bool
	Limits        Limits
	RunID         string
	// User is the server's UID[:GID] (default images.User(), the sandbox
	// user, whatever the image's USER); uid 0 makes a server-runs-as-root
	// finding.
	User string
	// Keep leaves the container in place (stopped) at Close.
	Keep bool
	// Log, if set, receives progress lines.
	Log io.Writer
	// Timings, if set, records where the session's time goes (--timings:
	// never in the report).
	Timings *timings.Track
	// Changes picks how file effects are read (default ChangesAuto).
	Changes ChangesMode
	// FileLimits bound each snapshot of the changes; MaxListed bounds the
	// files listed per call or phase (default 1000; the rest are counted).
	FileLimits overlay.Limits
	MaxListed  int
	// Agent is the host path of the static agent binary (mcpsandbox
	// itself, see FindAgent) that records processes and network attempts;
	// it reaches the container in an image layer (AgentImage). Empty runs
	// without it.
	Agent string
	// Network is the server's network (default NetworkNone).
	Network NetworkMode
	// MaxEvents bounds the agent's events (default 100,000).
	MaxEvents int
	// Seeds are copied into the container before the server starts; the
	// baseline every effect is measured from is taken after them.
	Seeds []probes.SeedFile
	// Secrets names the planted values found in data (nil: none planted).
	Secrets func(data string) []string
	// Placeholders are the planted values and their roles, for what the
	// session quotes from the server before the report is redacted (the
	// line that says why it did not start, which is cut after redaction).
	Placeholders []report.Placeholder
	// StartTimeout bounds the start and initialize (default 60s);
	// CallTimeout each request after it (default 30s).
	StartTimeout, CallTimeout time.Duration
	// ClientInfo is what the client calls itself in initialize.
	ClientInfo mcp.Implementation
	// Bounds limit what is read and kept of what the server sends (zero
	// fields: DefaultBounds).
	Bounds Bounds
	// Ambiguity, if set, is told each ambiguity recorded in the report
	// (Server.Ambiguities) as the stdout filter meets it, on the filter's
	// goroutine: run logs them.
	Ambiguity func(report.Ambiguity)
	// Disk bounds the space the server's writes may hold (default
	// DefaultDisk), measured every DiskInterval (default
	// DefaultDiskInterval); past it the server is stopped.
	Disk         int64
	DiskInterval time.Duration
	// Transport is how the server is reached (default stdio; see
	// Transport).
	Transport Transport
	// AllowHosts may be reached by the server, through the runner (see
	// allowhost.go); AllowDial dials them (default: a plain dial from the
	// runner); MaxAllowConns bounds the connections forwarded at once
	// (default DefaultMaxAllowConns).
	AllowHosts    []AllowHost
	AllowDial     DialFunc
	MaxAllowConns int
	// State, when set, is a server state (the run store's StateDir,
	// state.go): its files outside the workspace are restored before the
	// server starts and saved again at Close.
	State ServerState

	// LostKind is the problem kind a lost sandbox is recorded as (default
	// report.ProblemSandboxLost; an install's is "install"); LostWait
	// bounds the wait for the engine's word on how the container ended
	// (default DefaultLostWait; see Container.Lost).
	LostKind string
	LostWait time.Duration

	// created is ContainerOptions.created: a test's seam.
	created func(id string)
	// raw leaves the MCP session to the caller (OpenRaw): no client
	// connects, and the server's filtered stdio is handed out instead.
	raw bool
}

// Session is one MCP server running in one sandbox, seen from a client:
// the container, the MCP session over its stdio, and the recorder that
// turns what happened into effects. Requests return as soon as the server
// answers; effects are collected after, by Mark, so that a caller that is
// not a batch scan (a proxy, a client test) waits for nothing more than
// the server.
//
// The session keeps its observations in a report (Report): the server, the
// sandbox, the phases, the problems. Calls are the caller's to place.
type Session struct {
	opts SessionOptions
	cli  Engine
	rep  *report.Report

	ctr        *Container
	rec        *recorder
	cs         *mcp.ClientSession
	stdio      *RawStdio // with OpenRaw: the server's stdio, the caller's to speak on
	transcript *Transcript
	noise      *noiseFilter
	gate       *frameGate
	// structured is the last call's structuredContent (nil: none or no
	// result), for the values later calls are offered (probes.State).
	structured any
	image      string // the image the container runs (the workspace image, when there is one)
	workDir    string // the server's working directory ("": /workspace)
	home       string // the server's HOME when the image gives the user none (see layout)
	mounts     []*overlayMount
	wsSince    time.Time // host edits to the mounted directories after this are someone else's

	// The disk bound: the container's overlay2 layer directory ("" through
	// the API), the watch while the server runs, whether it stopped it.
	layer       string
	disk        *diskWatch
	diskStopped bool

	bounds struct{ walk, listed bool } // snapshot bounds already reported

	listChanged atomic.Int64 // notifications/tools/list_changed received
	// listed is the last tool listing that succeeded, for the next to be
	// read only if it differs (see RelistTools).
	listed *toolListing
	repeat pageRepeat // spares the SDK the pages of listed read again

	closeOnce sync.Once
	closeErr  error
	kept      string
	// lost, once the container is seen lost, wraps ErrSandboxLost (see
	// LostErr).
	lost error

	// Over HTTP: the way into the container's network namespace, and the
	// client's idle connections to close at the end.
	netns *netnsDialer
	idle  func()
	// The allowed hosts: their plan, the forwarding, and its own way into
	// the container's network namespace.
	allowPlan allowPlan
	allow     *allowForward
	allowNS   *netnsDialer
	// connFailures counts the HTTP requests and response streams that
	// failed on the connection; lastFailure says how the last did.
	connFailures atomic.Int64
	lastFailure  atomic.Value // string
}

// DefaultClientInfo is what the client calls itself in initialize unless
// told otherwise: the name and version Claude Desktop sends, so that a
// server cannot tell a scan from an ordinary client by its name.
func DefaultClientInfo() mcp.Implementation {
	return mcp.Implementation{Name: "claude-ai", Version: "0.1.0"}
}

// ErrServerStart marks a server that did not start or answer initialize.
var ErrServerStart = errors.New("the server did not start")

// Open starts the server in a new sandbox and initializes it: seeds, the
// baseline snapshot, the startup phase (everything up to the server's own
// exec), initialize and its phase. It always returns a session, even with
// an error, so that the caller registers Close before checking the error:
// Close tears down whatever was started and fills in the server's last
// words.
func Open(ctx context.Context, cli Engine, opts SessionOptions) (*Session, error) {
	s := newSession(cli, opts)
	return s, s.open(ctx)
}

// RawStdio is the server's stdio as OpenRaw hands it out: Reader gives
// the JSON-RPC lines the server writes (noise dropped, messages over the
// bounds refused as for a scan), Writer goes to its stdin (closing it is
// EOF). Close closes both: nothing more is read or written.
type RawStdio struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
}

// Close closes the server's stdin and stops reading its stdout.
func (r *RawStdio) Close() error {
	r.Reader.Close()
	return r.Writer.Close()
}

// OpenRaw starts the server as Open does, up to the end of the startup
// phase, and leaves the MCP session to the caller (a proxy relays its
// client's): no initialize is sent. Like Open it always returns a
// session, to Close whatever happens. Over HTTP the connection is handed
// out as lines all the same (rawHTTP).
func OpenRaw(ctx context.Context, cli Engine, opts SessionOptions) (*Session, *RawStdio, error) {
	opts.raw = true
	s := newSession(cli, opts)
	s.gate.passAsRead = true
	err := s.open(ctx)
	return s, s.stdio, err
}

// DefaultStartTimeout bounds a server's start and handshake when
// SessionOptions.StartTimeout is not set (--start-timeout).
const DefaultStartTimeout = 60 * time.Second

func newSession(cli Engine, opts SessionOptions) *Session {
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	setDefault(&opts.StartTimeout, DefaultStartTimeout)
	setDefault(&opts.CallTimeout, 30*time.Second)
	setDefault(&opts.DiskInterval, DefaultDiskInterval)
	opts.DiskInterval = max(opts.DiskInterval, diskTick)
	if opts.Disk <= 0 {
		opts.Disk = DefaultDisk
	}
	if opts.Network == 0 {
		opts.Network = NetworkNone
	}
	if opts.Changes == 0 {
		opts.Changes = ChangesAuto
	}
	if opts.MaxListed <= 0 {
		opts.MaxListed = 1000
	}
	if opts.ClientInfo.Name == "" {
		opts.ClientInfo = DefaultClientInfo()
	}
	if opts.User == "" {
		opts.User = images.User()
	}
	opts.Bounds = opts.Bounds.WithDefaults()
	opts.Transport = opts.Transport.WithDefaults()
	rep := report.New()
	rep.Server.Command = append([]string{}, opts.Argv...)
	if opts.Source != nil {
		src := *opts.Source
		src.Line = append([]string{}, src.Line...)
		rep.Server.Package = &src
	}
	rep.Server.Image = opts.Image
	if opts.Transport.Kind.OverHTTP() {
		rep.Server.Transport = opts.Transport.Kind.String()
	}
	if opts.FileLimits.HashBudget <= 0 {
		opts.FileLimits.HashBudget = overlay.DefaultHashBudget
	}
	rep.Sandbox = report.Sandbox{Network: opts.Network.String(), Agent: opts.Agent != "", User: opts.User,
		Isolation: IsolationSession.String(), PidsLimit: opts.Limits.Pids, MemoryMB: opts.Limits.MemoryMB,
		CPUs: opts.Limits.CPUs, Workspace: "empty", HashBudget: opts.FileLimits.HashBudget, DiskLimit: opts.Disk}
	transcript := NewTranscript(opts.Bounds.MaxTranscript)
	gate := newFrameGate(opts.Bounds)
	gate.onAmbiguity = opts.Ambiguity
	return &Session{opts: opts, cli: cli, rep: rep, transcript: transcript, noise: &noiseFilter{maxKeep: 5, raw: transcript.recordRaw},
		gate: gate, image: opts.Image}
}

func (s *Session) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, format+"\n", args...)
	}
}

// Problem records a failure of the run or the server in the report,
// during call (0: none).
func (s *Session) Problem(kind string, call int, format string, args ...any) {
	s.rep.Problems = append(s.rep.Problems, report.Problem{Kind: kind, Call: call, Message: fmt.Sprintf(format, args...)})
}

func (s *Session) open(ctx context.Context) error {
	if len(s.opts.Argv) == 0 {
		end := s.opts.Timings.Begin(timings.StepImage, 0)
		err := s.imageCommand(ctx)
		end()
		if err != nil {
			return err
		}
	}
	o := s.opts
	switch o.Network {
	case NetworkNone, NetworkSinkhole:
	case NetworkBridge, NetworkHost:
		s.Problem("network", 0, "--network %s: the server could reach other machines; nothing in this report proves it did not leave", o.Network)
	default:
		return &InfraError{Cause: fmt.Sprintf("unknown network mode %v", o.Network), Fix: "use none, sinkhole, bridge or host"}
	}
	if o.Network == NetworkSinkhole && o.Agent == "" {
		return &InfraError{Cause: "--network sinkhole needs the agent", Fix: "leave out --no-agent"}
	}
	if err := o.Transport.Check(o.Network); err != nil {
		return &InfraError{Cause: "--transport " + o.Transport.Kind.String() + ": " + err.Error()}
	}
	if err := s.planAllow(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if err := s.launch(ctx, startCtx); err != nil {
		return err
	}
	ctr := s.ctr
	var err error
	var inner mcp.Transport
	if o.Transport.Kind.OverHTTP() {
		// Over HTTP startup ends once the port accepts a connection, so
		// that the server's listen is always a startup effect.
		inner, err = s.httpTransport(ctx, startCtx, ctr)
		s.Phase(ctx, "startup", 0)
		if err != nil {
			return err
		}
		if o.raw {
			return s.rawHTTP(ctx, startCtx, inner)
		}
	} else {
		s.Phase(ctx, "startup", 0)
		pr, pw := io.Pipe()
		go s.noise.filter(ctr.Stdout(), pw, s.gate)
		if o.raw {
			s.stdio = &RawStdio{Reader: pr, Writer: ctr.Stdin()}
			return nil
		}
		// The filter passes no line over the message bound; the SDK's own
		// cap leaves room for the error a refusal puts in a message's place.
		inner = &mcp.IOTransport{Reader: pr, Writer: ctr.Stdin(), MaxLineLength: o.Bounds.MaxMessage + 64<<10}
	}
	transport := recordingTransport{Transport: inner, t: s.transcript, gate: s.gate, repeat: &s.repeat}
	info := o.ClientInfo
	client := mcp.NewClient(&info, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{},
		// Counted only: the scan lists the tools at fixed points (see
		// toollist.go), whenever the notification comes.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.listChanged.Add(1) }})
	endHandshake := o.Timings.Begin(timings.StepHandshake, 0)
	cs, err := client.Connect(startCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion()})
	endHandshake()
	if err != nil {
		if nf := s.notFound(ctx, ctr, err); nf != nil {
			return nf
		}
		switch {
		case ctx.Err() != nil:
			// The caller says why its context ended.
		case startCtx.Err() != nil:
			s.Problem("timeout", 0, "the server did not answer initialize within %s", o.StartTimeout)
		default:
			if _, r := s.gate.take("initialize"); r != nil {
				s.Problem(ProblemProtocolBound, 0, "the answer to initialize: %s", r)
			} else if exit := s.exitBeforeInitialize(ctx, ctr, err); exit != nil {
				// What the server said as it went says why, not the EOF.
				s.Problem("crash", 0, "%s", exit)
				return fmt.Errorf("%w: %w", ErrServerStart, exit)
			} else {
				s.Problem("protocol", 0, "initialize failed: %s%s", report.OneLine(s.clip(err.Error())), s.authHint(err))
			}
		}
		return fmt.Errorf("%w: %w%s", ErrServerStart, err, s.authHint(err))
	}
	s.cs = cs
	s.Phase(ctx, "initialize", 0)

	s.rep.Server.ProtocolVersion = cs.InitializeResult().ProtocolVersion
	s.serverFromHandshake()
	if !report.ToolAnnotationsIn(s.rep.Server.ProtocolVersion) {
		s.Problem("protocol", 0, "the server speaks protocol version %s, which has no tool annotations: whatever hints its tools send, none is judged", s.rep.Server.ProtocolVersion)
	}
	s.logf("initialized %s (protocol %s)", s.rep.Server.ServerInfo, s.rep.Server.ProtocolVersion)
	return nil
}

// launch starts the container as open does, up to the server's own exec:
// the agent's layer, the workspace and package (mounted, or copied into
// layers), the container with its recorder, and the agent's wait for the
// exec. startCtx bounds the start.
func (s *Session) launch(ctx, startCtx context.Context) error {
	o := s.opts
	// The agent's layer, then the workspace's on top of it. Each is held
	// until the container exists, so that no eviction removes it first.
	var holds []pin
	release := func() {
		for _, p := range holds {
			if err := p.release(context.WithoutCancel(ctx), s.cli); err != nil {
				s.logf("%v", err)
			}
		}
		holds = nil
	}
	defer release()
	if o.Agent != "" {
		s.logf("adding the agent to %s", s.image)
		end := o.Timings.Begin(timings.StepImage, 0)
		p, err := agentImage(ctx, s.cli, s.image, o.Agent, o.RunID)
		end()
		if err != nil {
			return asInfra(err, "adding the agent to the image")
		}
		s.image = p.ID
		holds = append(holds, p)
	}
	var ctr *Container
	var err error
	dirs, err := o.hostDirs()
	if err != nil {
		return err
	}
	if o.Workspace != "" {
		s.rep.Sandbox.Workspace = "host"
	}
	s.rep.Sandbox.Package = o.packageTarget()
	if len(dirs) > 0 {
		// Mounted copy-on-write where the kernel and the engine allow it
		// (nothing copied); copied into image layers otherwise. The API
		// change source cannot see a mount: it gets the copy.
		if o.Changes != ChangesAPI && !o.CopyWorkspace {
			end := o.Timings.Begin(timings.StepStart, 0)
			ctr, err = s.start(ctx, startCtx, dirs)
			end()
			switch {
			case err == nil:
				s.rep.Sandbox.WorkspaceBy = "mount"
			case errors.Is(err, ErrMountUnsupported) || errors.Is(err, errNoLayerDir):
				s.Problem("workspace", 0, "the workspace is copied, not mounted: %s", report.OneLine(err.Error()))
			default:
				return err
			}
		}
		if ctr == nil {
			for _, d := range dirs {
				s.logf("preparing an image layer from %s at %s", d.host, d.target)
				end := o.Timings.Begin(timings.StepImage, 0)
				p, skipped, err := workspaceImage(ctx, s.cli, s.image, d.host, d.target, o.RunID)
				end()
				for _, sk := range skipped {
					s.Problem("workspace", 0, "special file not copied into %s: %s", d.target, sk)
				}
				if err != nil {
					return asInfra(err, "preparing "+d.target)
				}
				s.image = p.ID
				holds = append(holds, p)
			}
			s.rep.Sandbox.WorkspaceBy = "copy"
		}
	}
	if ctr == nil {
		end := o.Timings.Begin(timings.StepStart, 0)
		ctr, err = s.start(ctx, startCtx, nil)
		end()
		if err != nil {
			return err
		}
	}
	s.ctr = ctr
	release() // the container pins its image now
	if o.Agent != "" {
		s.rec.pn = newProcNet(ctr.events, o.Network.Confined())
		s.rec.pn.answers = o.Network == NetworkSinkhole
		if len(s.allowPlan.routes) > 0 {
			s.rec.pn.allowed = s.allowPlan.lookup
		}
		s.rec.pn.secrets = o.Secrets
		// Startup ends once the server runs, so that its own exec is always
		// a startup effect.
		end := o.Timings.Begin(timings.StepStart, 0)
		ctr.events.waitExec(ctx, o.StartTimeout)
		end()
	}
	return nil
}

// serverFromHandshake records serverInfo, capabilities and instructions as
// the server sent them: in its answer to initialize or, when the session
// began with server/discover (2026-07-28 on), in that answer, where
// serverInfo is under _meta.
func (s *Session) serverFromHandshake() {
	var hs struct {
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Capabilities json.RawMessage `json:"capabilities"`
		Instructions string          `json:"instructions"`
		Meta         struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	raw := s.transcript.Results("initialize")
	if len(raw) == 0 {
		raw = s.transcript.Results("server/discover")
	}
	if len(raw) == 0 || json.Unmarshal(raw[len(raw)-1], &hs) != nil {
		return
	}
	if hs.ServerInfo == nil {
		hs.ServerInfo = hs.Meta.ServerInfo
	}
	s.rep.Server.ServerInfo, s.rep.Server.Capabilities, s.rep.Server.Instructions = hs.ServerInfo, hs.Capabilities, hs.Instructions
	s.boundServer()
}

// notFound is the error for a server command that is not there, if that
// is why the server ended: under the agent a command that is not there is
// the child's exit 127 (126: not executable), not a start error from the
// engine.
func (s *Session) notFound(ctx context.Context, ctr *Container, err error) error {
	o := s.opts
	if st, serr := ctr.State(context.WithoutCancel(ctx)); serr == nil && !st.Running && o.Agent != "" && (st.ExitCode == 127 || st.ExitCode == 126) {
		tail, _, _ := ctr.Stderr()
		return &InfraError{Cause: fmt.Sprintf("the server command %q is not found or not executable in image %s (%s)", o.Argv[0], o.Image, report.OneLine(lastLine(tail))),
			Fix: "check the command, or mount it with --mount", Err: err}
	}
	return nil
}

// start creates and starts the container: the seeds go in, and the state
// with them is the baseline every effect is measured from. The host
// directories in mount are mounted copy-on-write after the container
// starts and before the server does; an error wrapping
// ErrMountUnsupported means the caller should copy them instead (nothing
// is left behind).
func (s *Session) start(ctx, startCtx context.Context, mount []hostDir) (*Container, error) {
	o := s.opts
	s.rec = &recorder{maxListed: o.MaxListed, ignore: mountPoints(o.Mounts), hashBudget: o.FileLimits.HashBudget,
		walkSpan: func() func() { return o.Timings.Begin(timings.StepWalk, 0) }}
	var mounts []*overlayMount
	closeMounts := func() {
		for _, m := range mounts {
			m.close()
		}
	}
	var hs *hostSource
	seeds := o.Seeds
	if len(mount) > 0 {
		seeds = nil
		for _, f := range o.Seeds {
			if !under(f.Path, mount) {
				seeds = append(seeds, f) // those under a mount go in its seed layer
			}
		}
	}
	beforeStart := func(ctx context.Context, id string) error {
		if err := s.layout(ctx, id); err != nil {
			return err
		}
		if o.State != nil {
			// Before the seeds and the baseline: the state is where the
			// server starts from, not an effect.
			if err := s.restoreState(ctx, id); err != nil {
				return asInfra(err, "restoring the server's state")
			}
		}
		if len(seeds) > 0 {
			if err := seed(ctx, s.cli, id, seeds, o.Workspace); err != nil {
				return err
			}
		}
		if err := mountPointsIn(ctx, s.cli, id, mount); err != nil {
			return err
		}
		src, how, err := newChangeSource(ctx, s.cli, id, s.image, o.Changes, o.RunID, o.FileLimits)
		if err != nil {
			return asInfra(err, "reading the container's changes")
		}
		s.rec.src, s.rep.Sandbox.Changes = src, how.String()
		s.layer = layerDir(src)
		if len(mount) > 0 {
			dir := layerDir(src)
			if dir == "" {
				return errNoLayerDir
			}
			// Host edits from now on are someone else's: the walk at the end
			// looks for ctimes after this (less a margin: ctime is coarse).
			s.wsSince = time.Now().Add(-wsSinceMargin)
			for _, d := range mount {
				m, err := newOverlayMount(d.host, d.target, dir, d.state, o.Seeds)
				if err != nil {
					return err
				}
				mounts = append(mounts, m)
			}
			s.rec.src = newMountedSource(src, mounts, o.FileLimits)
		}
		hs = &hostSource{changeSource: s.rec.src}
		s.rec.src = hs
		// Nothing runs yet: nothing is held.
		_, base, _, err, _ := s.rec.read(ctx, time.Time{}, true)
		if err != nil {
			return asInfra(err, "reading the container's changes")
		}
		s.rec.prev = base
		return nil
	}
	afterStart := func(ctx context.Context, id string, pid int) error {
		if o.Transport.Kind.OverHTTP() {
			// First: a runner that cannot reach the port stops before
			// anything else is set up.
			d, err := openNetns(id, pid)
			if err != nil {
				return err
			}
			s.netns.close() // a first start's, were the mounts refused
			s.netns = d
		}
		if err := s.startAllow(id, pid); err != nil {
			return err
		}
		var targets []string
		for _, m := range mounts {
			if err := m.attach(pid); err != nil {
				return err
			}
			targets = append(targets, m.target)
		}
		// The writable places outside the overlay, read from the host,
		// before the server starts (under the agent, which waits for us).
		volumes, err := writableMounts(ctx, s.cli, id)
		if err != nil {
			return err
		}
		for _, p := range volumes {
			for m := range mountPoints([]Mount{{Target: p}}) {
				s.rec.ignore[m] = true // the engine makes them, not the server
			}
		}
		if v, err := openHostView(id, pid, o.FileLimits, volumes); err != nil {
			s.Problem("effects", 0, "/dev/shm, /dev, message queues, System V IPC and the engine's /etc files are not observed: %s", report.OneLine(err.Error()))
		} else {
			hs.view = v
			if err := hs.baseline(ctx, &s.rec.prev); err != nil {
				return asInfra(err, "reading the container's shared memory and IPC")
			}
		}
		s.watchHeld(pid, targets)
		s.watchDisk(ctx, id, pid, targets)
		return nil
	}
	s.logf("starting %s in %s", strings.Join(o.Argv, " "), s.image)
	ctr, err := Start(startCtx, s.cli, ContainerOptions{Image: s.image, Argv: o.Argv, Env: o.Env, User: o.User,
		Mounts: o.Mounts, Limits: o.Limits, RunID: o.RunID, keep: o.Keep, ExtraHosts: s.allowPlan.extraHosts,
		Agent: o.Agent != "", WorkingDir: s.workDir, Home: func() string { return s.home }, Network: o.Network, MaxEvents: o.MaxEvents, ShmSize: o.Disk, Secrets: o.Secrets, BeforeStart: beforeStart, AfterStart: afterStart,
		LostWait: o.LostWait, created: o.created})
	if err != nil {
		if s.rec.src != nil {
			err = errors.Join(err, s.rec.src.Close(context.WithoutCancel(ctx)))
			s.rec.src = nil
		} else {
			closeMounts()
		}
		return nil, err
	}
	s.mounts = mounts
	return ctr, nil
}

// wsSinceMargin is how much earlier than the mount host edits count from:
// file times are only as fine as the kernel's clock tick.
const wsSinceMargin = 50 * time.Millisecond

// Timings is the session's track for --timings (nil: none), for the
// steps its caller times (a linger, a replay's window).
func (s *Session) Timings() *timings.Track { return s.opts.Timings }

// Report is the session's observations so far; Close completes them.
func (s *Session) Report() *report.Report { return s.rep }

// Transcript is every JSON-RPC frame of the session.
func (s *Session) Transcript() *Transcript { return s.transcript }

// Mark collects the effects since the last mark; call says whether the
// stretch was a tool call (processes it left running are then marked
// background). An error reading the files is recorded as a problem (on
// call seq, if any) and the effects read so far are returned.
func (s *Session) Mark(ctx context.Context, call bool, seq int) report.Effects {
	// The snapshot itself is not cut short (it would report a partial
	// walk as deletions), but hashing stops at the run's deadline.
	deadline, _ := ctx.Deadline()
	end := s.opts.Timings.Begin(timings.StepSnapshot, seq)
	eff, unhashed, err := s.rec.mark(context.WithoutCancel(ctx), call, deadline)
	end()
	// A read that failed may be a container gone: the engine is asked.
	if lerr := s.checkLost(ctx, seq, err != nil); lerr == nil && err != nil {
		s.Problem("effects", seq, "reading file effects: %s", report.OneLine(err.Error()))
	}
	// A bound hit is said once, where it first was; the verdict's
	// snapshot-truncated finding lists every place.
	where := 0
	if call {
		where = seq
	}
	if eff.FilesTruncated && !s.bounds.walk {
		s.bounds.walk = true
		s.Problem("snapshot", where, "the file snapshot hit one of its bounds (--max-files entries, 32 MiB of paths, or the run's --timeout): changes past it were not seen (the workspace and the home directories were walked first)")
	}
	if eff.FilesOmitted > 0 && !s.bounds.listed {
		s.bounds.listed = true
		s.Problem("snapshot", where, "%d file change(s) past the listing bound were counted, not listed, and not judged", eff.FilesOmitted)
	}
	s.unhashed(seq, unhashed, deadline)
	return eff
}

// walkAgain adds to the teardown's effects what a walk of the layers
// finds that the change journals did not tell the marks (see
// overlay.Journal): the calls they were made in are not known, so they
// are the teardown's, and a problem says so.
func (s *Session) walkAgain(ctx context.Context, eff report.Effects, unhashed []string, deadline time.Time) (report.Effects, []string, error) {
	missed, more, err := s.rec.walkAgain(ctx, deadline)
	if err != nil {
		return eff, unhashed, err
	}
	n := len(missed.Files) + missed.FilesOmitted
	if n == 0 {
		return eff, unhashed, nil
	}
	named := make([]string, 0, min(len(missed.Files), maxUnhashedNamed))
	for _, f := range missed.Files[:min(len(missed.Files), maxUnhashedNamed)] {
		named = append(named, f.Path)
	}
	s.Problem(report.ProblemJournal, 0, "%d file change(s) the change journal did not tell were found by the teardown's walk, so the stretch they were made in is not known: %s", n, strings.Join(named, ", "))
	for _, f := range missed.Files {
		if len(eff.Files) >= s.rec.maxListed {
			eff.FilesOmitted++
			continue
		}
		eff.Files = append(eff.Files, f)
	}
	eff.FilesOmitted += missed.FilesOmitted
	slices.SortStableFunc(eff.Files, func(a, b report.FileChange) int { return strings.Compare(a.Path, b.Path) })
	eff.FilesTruncated = eff.FilesTruncated || missed.FilesTruncated
	// A file neither snapshot could hash is one.
	unhashed = slices.Compact(slices.Sorted(slices.Values(append(unhashed, more...))))
	eff.FilesUnhashed = len(unhashed)
	return eff, unhashed, nil
}

// watchHeld starts looking for the files the container's processes hold
// (mapped shared, open for writing), from its init (pid, on the host), so
// that each snapshot compares them by content. The API source cannot
// look (the engine may be remote), and the report says so.
func (s *Session) watchHeld(pid int, targets []string) {
	if s.rep.Sandbox.Changes == ChangesAPI.String() {
		s.Problem("effects", 0, "with --changes api the files the server holds (mapped shared, open for writing) cannot be found, and the API gives no ctime: a file rewritten with its size and mtime unchanged (through a shared mapping, or with its mtime put back) is not seen")
		return
	}
	if pid == 0 {
		return
	}
	h, err := newHeldFiles(pid, append([]string{"/"}, targets...)...)
	if err != nil {
		s.rec.heldBroken = true
		s.Problem("effects", 0, "the files the server holds cannot be found (%s): every file is compared by content at every snapshot", report.OneLine(err.Error()))
		return
	}
	s.rec.held = h
}

// unhashed records the files a snapshot did not compare by content, over
// the hash budget or past the run's deadline: a problem naming them, and
// the count the verdict fails the gate on.
func (s *Session) unhashed(seq int, paths []string, deadline time.Time) {
	if len(paths) == 0 {
		return
	}
	s.rep.Sandbox.FilesUnhashed += len(paths)
	why := fmt.Sprintf("the hash budget of %d bytes per snapshot (--hash-budget) was spent", s.opts.FileLimits.HashBudget)
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		why = "the run reached its --timeout"
	}
	named := make([]string, 0, min(len(paths), maxUnhashedNamed))
	for _, p := range paths[:min(len(paths), maxUnhashedNamed)] {
		esc, _ := overlay.EscapePath(p)
		named = append(named, esc)
	}
	more := ""
	if len(paths) > len(named) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(named))
	}
	s.Problem("hash-budget", seq, "%d file(s) not compared by content, so a change to them may be missing: %s: %s%s", len(paths), why, strings.Join(named, ", "), more)
}

// maxUnhashedNamed bounds the files a hash-budget problem names.
const maxUnhashedNamed = 20

// Phase closes a stretch of the run that is not a call and records it; a
// "between" phase is kept only when something happened in it.
func (s *Session) Phase(ctx context.Context, name string, after int) {
	eff := s.Mark(ctx, false, after)
	if name == "between" && eff.Empty() {
		return
	}
	s.rep.Phases = append(s.rep.Phases, report.Phase{Name: name, After: after, Effects: eff})
}

// ListTools follows nextCursor through every page of tools/list and returns
// the tools from the raw results, so that annotations are kept exactly as
// sent. Tools that do not decode, or are listed twice, are problems. The
// list is cut at the bounds (pages, bytes, tools, a page refused on the
// wire): what was listed before is kept, a protocol-bound problem says
// where, and Server.ToolListTruncated is set.
func (s *Session) ListTools(ctx context.Context) ([]report.Tool, error) {
	l, err := s.RelistTools(ctx)
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

// Listing is what RelistTools read.
type Listing struct {
	// Tools are the tools kept, as ListTools returns them.
	Tools []report.Tool
	// Same is set when every page came back byte-identical to the
	// session's last listing's and the list was cut alike: Tools are then
	// that listing's (a copy), and its problems are not said again.
	Same bool
	// Bytes counts the tools/list results received, kept or not, failed
	// listing included.
	Bytes int
}

// RelistTools is ListTools that also says whether the listing is the
// session's last one again, and how many bytes it read. Decoding,
// bounding and comparing a list that did not change would cost the scan
// O(tools) after every call (95 ms a call at 1,000 tools); the bytes are
// still fetched and hashed, so a list changed for one call and back is
// still two changes.
func (s *Session) RelistTools(ctx context.Context) (l Listing, err error) {
	if s.cs == nil {
		return l, ErrServerStart
	}
	defer s.opts.Timings.Begin(timings.StepList, 0)()
	last := s.listed
	s.listed = nil                  // set again only by a listing that succeeds
	s.transcript.take("tools/list") // what an earlier listing left, were it cut short
	b := s.opts.Bounds
	seen := map[string]bool{}
	cursor, cut := "", ""
	pages, size := 0, 0
	var cursors []string
	for {
		if pages >= b.MaxToolPages {
			cut = fmt.Sprintf("the server has more than %d pages of tools (the page bound)", b.MaxToolPages)
			break
		}
		if last != nil && pages < len(last.sums) {
			s.repeat.arm(last.sums[pages])
		}
		lctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
		res, err := s.cs.ListTools(lctx, &mcp.ListToolsParams{Cursor: cursor})
		cancel()
		if s.repeat.disarm() && errors.Is(err, errPageRepeated) {
			// The same bytes as the last listing's page: the same cursor.
			res, err = &mcp.ListToolsResult{NextCursor: last.cursors[pages]}, nil
		}
		if _, r := s.gate.take("tools/list"); r != nil {
			cut = fmt.Sprintf("page %d of tools/list: %s", pages+1, r)
			break
		}
		if err != nil {
			return l, err
		}
		raws := s.transcript.Results("tools/list")
		if len(raws) > pages {
			size += len(raws[pages])
		}
		l.Bytes = size
		if size > b.MaxToolListBytes {
			cut = fmt.Sprintf("the tools/list results passed %d bytes in all (the tool list bound) at page %d, which was not kept", b.MaxToolListBytes, pages+1)
			break
		}
		pages++
		cursors = append(cursors, res.NextCursor)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return l, fmt.Errorf("the server repeats cursor %q", s.clip(res.NextCursor))
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	raws := s.transcript.take("tools/list")
	raws = raws[:min(pages, len(raws))]
	now := &toolListing{cursors: cursors, cut: cut, sums: make([][sha256.Size]byte, len(raws))}
	for i, raw := range raws {
		now.sums[i] = sha256.Sum256(raw)
	}
	if last.same(now) {
		now.tools = last.tools
		s.listed = now
		l.Tools, l.Same = slices.Clone(last.tools), true
		return l, nil
	}
	if l.Tools, err = s.decodeTools(raws, cut); err != nil {
		return l, err
	}
	now.tools = slices.Clone(l.Tools)
	s.listed = now
	return l, nil
}

// toolListing is what a listing received, by page (the results' SHA-256
// and next cursors), how it was cut, and the tools kept from it.
type toolListing struct {
	sums    [][sha256.Size]byte
	cursors []string
	cut     string
	tools   []report.Tool
}

// same says whether two listings received the same bytes and were cut
// alike: what is kept of them is then the same, a function of the bytes
// and the session's bounds.
func (l *toolListing) same(o *toolListing) bool {
	return l != nil && o != nil && l.cut == o.cut && slices.Equal(l.sums, o.sums) && slices.Equal(l.cursors, o.cursors)
}

// decodeTools reads the tools of the raw tools/list results, within the
// bounds; cut says why the list was cut already ("": it was not).
func (s *Session) decodeTools(raws []json.RawMessage, cut string) ([]report.Tool, error) {
	b := s.opts.Bounds
	tools := []report.Tool{} // present, never null, when none is kept
	names := map[string]bool{}
	var bounded []string
	for _, raw := range raws {
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := wire.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("decoding tools/list result: %w", err)
		}
		for i, rt := range page.Tools {
			if len(tools) >= b.MaxTools && cut == "" {
				cut = fmt.Sprintf("the server lists more than %d tools (the tool bound); %d more on this page were not kept", b.MaxTools, len(page.Tools)-i)
			}
			if cut != "" && len(tools) >= b.MaxTools {
				break
			}
			tool, err := DecodeTool(rt)
			if err != nil {
				s.Problem("protocol", 0, "%s", s.clip(err.Error()))
				continue
			}
			if len(tool.Name) > b.MaxSchema {
				s.Problem(ProblemProtocolBound, 0, "a tool's name of %d bytes is over the schema bound (%d bytes); the tool is left out: %q", len(tool.Name), b.MaxSchema, s.clip(tool.Name))
				s.rep.Server.ToolListTruncated = true
				continue
			}
			if names[tool.Name] {
				s.Problem("protocol", 0, "tool %q is listed twice; the first is kept", s.clip(tool.Name))
				continue
			}
			names[tool.Name] = true
			if boundTool(&tool, b.MaxSchema) {
				bounded = append(bounded, tool.Name)
			}
			tools = append(tools, tool)
		}
	}
	if len(bounded) > 0 {
		// A tool whose inputSchema was replaced is not called: a place to
		// hide, so the list counts as cut.
		s.rep.Server.ToolListTruncated = true
		s.Problem(ProblemProtocolBound, 0, "%d tool(s) sent a description, title, annotations or schema over the schema bound (%d bytes): cut or replaced (a replaced inputSchema accepts nothing, so the tool is not called): %s",
			len(bounded), b.MaxSchema, s.names(bounded))
	}
	if cut != "" {
		s.rep.Server.ToolListTruncated = true
		s.Problem(ProblemProtocolBound, 0, "the tool list was cut: %s; the %d tool(s) listed before are kept, the rest are neither called nor judged", cut, len(tools))
	}
	return tools, nil
}

// ToolListChanged counts the notifications/tools/list_changed the server
// sent so far.
func (s *Session) ToolListChanged() int64 { return s.listChanged.Load() }

// boundTool cuts a tool's description and title, and replaces its
// annotations and schemas, where they are over max bytes; it says whether
// it did. The hints were read before.
func boundTool(t *report.Tool, max int) bool {
	did := cutString(&t.Description, max)
	did = cutString(&t.Title, max) || did
	did = replaceRaw(&t.InputSchema, "inputSchema", max, true) || did
	did = replaceRaw(&t.OutputSchema, "outputSchema", max, false) || did
	return replaceRaw(&t.Annotations, "annotations", max, false) || did
}

// cutString cuts str to max bytes (and valid UTF-8) when it is longer.
func cutString(str *string, max int) bool {
	if len(*str) <= max {
		return false
	}
	*str = strings.ToValidUTF8((*str)[:max], "") + "…"
	return true
}

// replaceRaw replaces a JSON value over max bytes with an object that
// says what it was (size, SHA-256); refuse makes it a schema nothing
// validates against.
func replaceRaw(raw *json.RawMessage, what string, max int, refuse bool) bool {
	if len(*raw) <= max {
		return false
	}
	sum := sha256.Sum256(*raw)
	m := map[string]any{"$comment": fmt.Sprintf("mcpsandbox: the %s (%d bytes, sha256 %x) is over the schema bound (%d bytes) and was not kept", what, len(*raw), sum, max)}
	if refuse {
		m["not"] = map[string]any{}
	}
	*raw, _ = json.Marshal(m)
	return true
}

// boundServer cuts or replaces what initialize sent over the schema bound:
// instructions are cut, serverInfo and capabilities replaced.
func (s *Session) boundServer() {
	sv, max := &s.rep.Server, s.opts.Bounds.MaxSchema
	did := cutString(&sv.Instructions, max)
	did = replaceRaw(&sv.ServerInfo, "serverInfo", max, false) || did
	if did = replaceRaw(&sv.Capabilities, "capabilities", max, false) || did; did {
		s.Problem(ProblemProtocolBound, 0, "initialize sent instructions, serverInfo or capabilities over the schema bound (%d bytes): cut or replaced", max)
	}
}

// names lists up to MaxNamed names, quoted and clipped.
func (s *Session) names(names []string) string {
	var out []string
	for _, n := range names[:min(len(names), MaxNamed)] {
		out = append(out, strconv.Quote(s.clip(n)))
	}
	if len(names) > MaxNamed {
		out = append(out, fmt.Sprintf("and %d more", len(names)-MaxNamed))
	}
	return strings.Join(out, ", ")
}

// MaxNamed bounds the names one problem lists.
const MaxNamed = 20

// clip bounds a string from the server that a problem or an error quotes.
func (s *Session) clip(str string) string {
	if len(str) <= maxQuoted {
		return str
	}
	return strings.ToValidUTF8(str[:maxQuoted], "") + fmt.Sprintf("… (%d bytes)", len(str))
}

// maxQuoted bounds what of a string from the server a problem, or a
// call's error, quotes.
const maxQuoted = 1024

// ProblemProtocolBound is the problem kind of a bound hit by what the
// server sent: a message refused on the wire (size, nesting), a tool list
// cut, a tool's schema replaced.
const ProblemProtocolBound = "protocol-bound"

// CallRequest is one tools/call to make.
type CallRequest struct {
	Seq       int
	Tool      string
	Arguments json.RawMessage
	Source    string
	Negative  string
}

// Call makes one tools/call and returns as soon as the server answers (or
// the call times out); its effects are the caller's to collect with Mark.
func (s *Session) Call(ctx context.Context, req CallRequest) report.Call {
	call := report.Call{Seq: req.Seq, Tool: req.Tool, Arguments: req.Arguments, Source: req.Source, Negative: req.Negative, Effects: report.NewEffects()}
	step := timings.StepCall
	if req.Negative != "" || req.Source == probes.SourceBoundary {
		step = timings.StepProbe
	}
	defer s.opts.Timings.Begin(step, req.Seq)()
	if s.cs == nil {
		call.Error, call.ErrorKind = ErrServerStart.Error(), "transport"
		return call
	}
	timeout := s.opts.CallTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A container paused or removed from outside answers nothing: the call
	// ends as soon as the engine says so.
	go func() {
		select {
		case <-s.ctr.lostSignal():
			cancel()
		case <-cctx.Done():
		}
	}()
	start := time.Now()
	lost := s.connFailures.Load()
	res, err := s.cs.CallTool(cctx, &mcp.CallToolParams{Name: req.Tool, Arguments: req.Arguments})
	call.DurationMs = time.Since(start).Milliseconds()
	whole, refused := s.gate.take("tools/call")
	s.structured = nil
	if err == nil && refused == nil {
		s.structured = res.StructuredContent
	}
	var rpcErr *jsonrpc.Error
	switch {
	case err != nil && s.lostNow() != "":
		call.Error, call.ErrorKind = "the sandbox was lost during the call: "+s.lostNow(), "transport"
	case refused != nil:
		// Refused on the wire: the error in its place is ours, not the
		// server's.
		call.Error, call.ErrorKind = "the client refused the result: "+refused.String(), "client"
		call.ResultBytes, call.ResultSha256 = refused.Result.Bytes, refused.Result.Sha256
		s.Problem(ProblemProtocolBound, req.Seq, "the answer to call %d (%s): %s", req.Seq, s.clip(req.Tool), refused)
	case err == nil:
		call.IsError = res.IsError
		call.Result = resultText(res, s.opts.Bounds.MaxResultText)
		if !res.IsError {
			call.FailsBy = report.ResultFailure(call.Result, res.StructuredContent)
		}
		call.WholeBytes, call.WholeSha256 = whole.Bytes, whole.Sha256
		call.Disclosed = s.disclosed(res)
		if whole.Bytes > int64(s.opts.Bounds.MaxResultText) {
			// Not kept whole: what it was is counted and hashed.
			call.ResultBytes, call.ResultSha256 = whole.Bytes, whole.Sha256
		}
	case s.gate.lostBy() != nil && ctx.Err() == nil:
		// The SDK could not read the server and closed the session: the
		// connection is gone, on the client's side (see ClientClosed).
		call.Error, call.ErrorKind = "the client closed the session: it could not read a message from the server: "+s.clip(s.gate.lostBy().Error()), "transport"
	case inputError(err) != "":
		// A multi-round-trip result (2026-07-28) asked for input the
		// client does not give, or asked too often: the SDK's client
		// failed the call, not the server.
		call.Error, call.ErrorKind = inputError(err)+s.clip(err.Error()), "client"
	case errors.As(err, &rpcErr) && rpcErr.Code == sdkRejected && s.connFailures.Load() > lost:
		// Over HTTP the SDK reports a request it could not send, or a
		// stream that broke, as this error: the connection failed during
		// the call, not the server's answer.
		call.Error, call.ErrorKind = "the connection to the server failed: "+s.clip(s.lastConnFailure()), "transport"
	case errors.As(err, &rpcErr):
		call.Error, call.ErrorKind = fmt.Sprintf("JSON-RPC error %d: %s", rpcErr.Code, s.clip(rpcErr.Message)), "rpc"
	case cctx.Err() != nil && ctx.Err() == nil:
		call.Error, call.ErrorKind = fmt.Sprintf("no result within --call-timeout %s", timeout), "timeout"
	case ctx.Err() != nil:
		call.Error, call.ErrorKind = "the run ended during the call: "+context.Cause(ctx).Error(), "interrupted"
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || (s.opts.Transport.Kind.OverHTTP() && isNetError(err)):
		call.Error, call.ErrorKind = s.clip(err.Error()), "transport"
	default:
		// The SDK may reject a result (for example one that does not match
		// the tool's output schema); the server still answered.
		call.Error, call.ErrorKind = s.clip(err.Error()), "client"
	}
	return call
}

// inputError says why the SDK's client failed a call whose results asked
// for input (multi-round-trip, 2026-07-28), to begin the call's error
// with: it could not fulfil a request (it offers no elicitation or
// sampling; roots it answers with none), or the server asked more rounds
// than the SDK allows. "" when err is not that, an error the server sent
// included.
func inputError(err error) string {
	var direct *jsonrpc.Error
	if errors.As(err, &direct) && error(direct) == err {
		return ""
	}
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "multi round-trip:"):
		return "the tool asked for input the client does not give: "
	case strings.HasPrefix(msg, "multi-round-trip:"):
		return "the tool asked for input more rounds than the client allows: "
	}
	return ""
}

// disclosed are the roles of the planted secrets in v, a result as
// received, whole: the text kept is cut at a bound, the model is not.
func (s *Session) disclosed(v any) []string {
	if s.opts.Secrets == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil // it was decoded from JSON: it encodes
	}
	return report.Roles(s.opts.Secrets(string(raw)))
}

// Structured is the last call's structuredContent, nil when it had none.
func (s *Session) Structured() any { return s.structured }

// ClientClosed says why the client, not the server, ended the session, if
// it did: the SDK could not read a message the server sent.
func (s *Session) ClientClosed() (string, bool) {
	lost := s.gate.lostBy()
	if lost == nil {
		return "", false
	}
	return "the client closed the session: it could not read a message from the server (" + report.OneLine(s.clip(lost.Error())) + ")", true
}

// ErrNoQuiet: the sandbox's agent cannot be asked for a quiet reading
// (--no-agent, or a runner that cannot signal the container's init); a
// linger then keeps its whole window.
var ErrNoQuiet = errNoQuiet

// quietWait bounds the wait for the agent's answer to a quiet request: it
// answers within agent.QuietGap and its few milliseconds of reading, so
// this is for a loaded machine.
const quietWait = 5 * time.Second

// Quiet asks the agent what in the sandbox can still act without outside
// input (see agent.QuietReading); a sandbox whose server has ended is
// quiet. ErrNoQuiet when the agent cannot be asked.
func (s *Session) Quiet(ctx context.Context) (agent.QuietReading, error) {
	if s.ctr == nil || s.ctr.events == nil {
		return agent.QuietReading{}, ErrNoQuiet
	}
	defer s.opts.Timings.Begin(timings.StepQuiet, 0)()
	return s.ctr.events.readQuiet(ctx, quietWait)
}

// AskQuiet asks the agent for a quiet reading without waiting for it: it
// arrives with the events and QuietReadings returns it (a request made
// within agent.QuietGap of the last reading is answered with the next).
// False when the agent cannot be asked.
func (s *Session) AskQuiet() bool {
	if s.ctr == nil || s.ctr.events == nil {
		return false
	}
	return s.ctr.events.askQuiet()
}

// QuietReadings returns the quiet readings that arrived since the last
// call of it, Quiet's own included, oldest first.
func (s *Session) QuietReadings() []agent.QuietReading {
	if s.ctr == nil || s.ctr.events == nil {
		return nil
	}
	return s.ctr.events.drainQuiet()
}

// Background lists the processes the last call left running.
func (s *Session) Background() []int { return s.rec.pn.background() }

// Settle waits, up to d, while the processes the last call left running
// live, and returns those still alive.
func (s *Session) Settle(ctx context.Context, d time.Duration) []int {
	defer s.opts.Timings.Begin(timings.StepSettle, 0)()
	return s.rec.pn.settle(ctx, d)
}

// Ping asks the server for a ping within d.
func (s *Session) Ping(ctx context.Context, d time.Duration) error {
	if s.cs == nil {
		return ErrServerStart
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.cs.Ping(pctx, nil)
}

// Exited says how the server ended, if it has.
func (s *Session) Exited(ctx context.Context) (State, bool) {
	if s.ctr == nil {
		return State{}, false
	}
	if s.opts.Transport.Kind.OverHTTP() {
		// A connection that broke can come before the engine sees the
		// server gone (over stdio the stream ends with the container):
		// a moment is waited for it, as at start.
		return s.ctr.Exited(context.WithoutCancel(ctx), startExitWait)
	}
	st, err := s.ctr.State(context.WithoutCancel(ctx))
	if err != nil || st.Running {
		return st, false
	}
	return st, true
}

// Close ends the session: it closes the MCP session (stdin at EOF), lets
// the server exit on its own for a moment, kills what is left, records
// the teardown phase, the server's exit and last words, and removes the
// container (unless kept). It is idempotent and safe on a session that
// never started.
func (s *Session) Close(ctx context.Context) error {
	// Teardown runs to its end whatever ctx says (the container must go),
	// but its snapshot hashes nothing past ctx's deadline (the run's
	// --timeout bounds hashing at teardown too), and its engine calls end
	// TeardownGrace past it.
	deadline, _ := ctx.Deadline()
	s.closeOnce.Do(func() {
		end := s.opts.Timings.Begin(timings.StepTeardown, 0)
		s.closeErr = s.teardown(context.WithoutCancel(ctx), deadline)
		end()
	})
	// A lost sandbox is an error of the session's, whoever met it first.
	return errors.Join(s.closeErr, s.lost)
}

// ExitGrace is how long teardown lets the server exit on its own once
// its stdin is closed.
const ExitGrace = 2 * time.Second

// Kept is the id of the container Keep left behind, after Close.
func (s *Session) Kept() string { return s.kept }

func (s *Session) teardown(ctx context.Context, deadline time.Time) error {
	var errs []error
	// Past the run's deadline the engine is waited for TeardownGrace more,
	// no longer: what it has not done by then is said, not waited for.
	var until time.Time
	unbounded := ctx
	if !deadline.IsZero() {
		until = deadline.Add(TeardownGrace)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	if s.ctr == nil {
		if s.cs != nil {
			closeSession(s.cs)
		}
		s.stopAllow()
		s.netns.close()
		s.finishDisk(deadline)
		if s.rec != nil && s.rec.src != nil {
			errs = append(errs, s.rec.src.Close(ctx))
		}
		return s.teardownErr(errs)
	}
	ctr := s.ctr
	// Lost or not is read before the runner stops it: after, what the
	// engine does to it is the runner's doing. A lost container's exit is
	// not the server's, and what is missing of it (its files, once
	// removed) is said by the loss, not as errors of the teardown.
	lost := s.LostErr(ctx, 0) // recorded in s.lost; Close returns it
	// Whether the server ended on its own is read before its stdin is
	// closed: after, whether it has exited yet is a matter of timing.
	if lost != nil {
		// Nothing of the server's own exit to record.
	} else if st, err := ctr.State(ctx); err != nil {
		errs = append(errs, err)
	} else if !st.Running {
		code := st.ExitCode
		s.rep.Server.ExitCode, s.rep.Server.OOMKilled = &code, st.OOMKilled
	}
	if s.cs != nil {
		closeSession(s.cs)
	}
	if s.stdio != nil {
		s.stdio.Close()
	}
	// The host edits are looked for while the container stops and goes:
	// once the server is stopped, later edits cannot reach it.
	edits := make(chan []report.Problem, 1)
	if len(s.mounts) > 0 {
		go func() { edits <- s.hostEdits() }()
	} else {
		edits <- nil
	}
	defer func() {
		select {
		case p := <-edits:
			s.rep.Problems = append(s.rep.Problems, p...)
			return
		default:
		}
		select {
		case p := <-edits:
			s.rep.Problems = append(s.rep.Problems, p...)
		case <-ctx.Done(): // past the teardown's bound
			s.Problem("workspace", 0, "the host directories were not checked for edits during the run: the check had not ended by --timeout and %s of teardown", TeardownGrace)
		}
	}()
	// The session is closed (stdin at EOF): give the server a moment to
	// exit on its own, so its exit status is its own, not our kill's.
	// Not past the run's deadline, though: a scan that timed out is
	// incomplete, and its teardown is bounded too.
	grace := time.Now().Add(ExitGrace)
	if s.opts.Transport.Kind.OverHTTP() {
		// Nothing tells a server over HTTP to end: it is stopped at once.
		grace = time.Now()
	}
	if !deadline.IsZero() && deadline.Before(grace) {
		grace = deadline
	}
	if lost != nil {
		// Paused, or gone: nothing of it will exit on its own.
		grace = time.Now()
	}
	ctr.awaitExit(ctx, grace)
	if err := ctr.Stop(ctx); err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		// Cut by the teardown's bound (the engine's kill waits for the
		// container's end, which takes it seconds under load): the
		// removal, forced, kills it all the same. A note.
		s.Problem("teardown", 0, "%s (not waited for past --timeout and %s of teardown: the container's forced removal kills it)", report.OneLine(err.Error()), TeardownGrace)
	} else {
		errs = append(errs, err)
	}
	if s.idle != nil {
		s.idle()
	}
	s.stopAllow()
	s.netns.close()
	// What the server (or what it left running) did since the last mark,
	// read before the container and its upper dir go away, and before the
	// disk's last measurement: past the deadline the snapshot stops at
	// once (overlay's walk), and is made within TeardownGrace, whereas the
	// measurement of a layer of 200,000 files takes seconds.
	// The snapshot stops at the deadline by itself (a walk of the layer
	// does at once past it), so it is made whatever the teardown's bound
	// says; what it asks of the engine (the API source) is bounded too, by
	// TeardownGrace from now at the latest.
	mctx := unbounded
	if !until.IsZero() {
		var cancel context.CancelFunc
		mctx, cancel = context.WithDeadline(unbounded, latest(until, time.Now().Add(TeardownGrace)))
		defer cancel()
	}
	eff, unhashed, err := s.rec.mark(mctx, false, deadline)
	if err == nil {
		// The journals' check: a walk finds what they did not tell.
		eff, unhashed, err = s.walkAgain(mctx, eff, unhashed, deadline)
	}
	switch {
	case err != nil && lost != nil:
		s.Problem(s.lostKind(), 0, "the teardown's file effects were not read, the sandbox being lost: %s", report.OneLine(err.Error()))
	case err != nil:
		errs = append(errs, fmt.Errorf("reading file effects at teardown: %w", err))
	}
	s.finishDisk(deadline)
	s.unhashed(0, unhashed, deadline)
	s.rep.Phases = append(s.rep.Phases, report.Phase{Name: "teardown", Effects: eff})
	s.saveState()
	if s.rec.src != nil {
		errs = append(errs, s.rec.src.Close(ctx))
	}
	s.rec.pn.fill(s.rep)
	if s.rec.pn != nil {
		started, dropped, agentErrs := ctr.events.status()
		if !started {
			s.Problem("agent", 0, "the agent never reported: processes and network attempts were not recorded")
		}
		if dropped > 0 {
			s.rep.Sandbox.EventsDropped = dropped
			s.Problem("agent", 0, "%d agent events dropped over the bound (an event flood)", dropped)
		}
		for _, e := range agentErrs {
			s.Problem("agent", 0, "%s", e)
		}
	}
	s.rep.Server.StderrTail, s.rep.Server.StderrBytes, s.rep.Server.StderrTruncated = ctr.Stderr()
	if s.rep.Server.StderrTruncated {
		// The tail no longer reaches back to the start, where a server
		// says why it failed.
		s.rep.Server.StderrHead = ctr.StderrHead()
	}
	if s.opts.Secrets != nil {
		found := ctr.StderrSecrets()
		if s.rep.Server.Instructions != "" {
			found = append(found, s.opts.Secrets(s.rep.Server.Instructions)...)
		}
		s.rep.Server.StderrDisclosed = report.Roles(found)
	}
	s.rep.Server.StdoutNoise, s.rep.Server.StdoutNoiseSample = s.noise.snapshot()
	s.rep.Server.Ambiguities, s.rep.Server.AmbiguitiesOmitted = s.gate.ambiguities()
	s.refusedElsewhere()
	if s.rep.Server.StdoutNoise > 0 {
		s.Problem("stdout-noise", 0, "the server wrote %d line(s) to stdout that are not JSON-RPC; they were dropped (first: %s)", s.rep.Server.StdoutNoise, s.rep.Server.StdoutNoiseSample[0])
	}
	if s.opts.Keep && lost == nil {
		s.kept = ctr.ID
		ctr.release()
	} else if err := ctr.closeBy(ctx, until); err != nil {
		var left *removalLeft
		if errors.As(err, &left) {
			// The engine has the request and goes on with it: a note,
			// not a failure.
			s.Problem("teardown", 0, "%s", report.OneLine(err.Error()))
		} else {
			errs = append(errs, err)
		}
	}
	if errors.Join(errs...) != nil && ctx.Err() != nil {
		// Say why a call was cut short, beyond the client's "context
		// deadline exceeded".
		errs = append(errs, fmt.Errorf("(the teardown's engine calls end at --timeout and %s)", TeardownGrace))
	}
	return s.teardownErr(errs)
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// refusedElsewhere counts the messages refused over a bound and reports
// those no request of ours was waiting for (notifications, requests from
// the server, answers to nothing): the rest were reported where they
// were waited for.
func (s *Session) refusedElsewhere() {
	kept, all, other := s.gate.refusals()
	s.rep.Server.MessagesRefused = all
	if other == 0 {
		return
	}
	first := ""
	for _, r := range kept {
		if !r.Answered {
			first = "; the first: " + r.String()
			if r.Method != "" {
				first += fmt.Sprintf(" (method %q)", s.clip(r.Method))
			}
			break
		}
	}
	s.Problem(ProblemProtocolBound, 0, "%d message(s) from the server that answer no request of the client's were refused over a bound and dropped%s", other, first)
}

// hostEdits reports edits made to the mounted host workspace by someone
// else during the run: the server saw them wherever it had not written
// the file itself, and they are no effect of its.
func (s *Session) hostEdits() []report.Problem {
	var out []report.Problem
	for _, m := range s.mounts {
		paths, n, err := overlay.ChangedSince(m.host, s.wsSince.UnixNano(), maxHostEdits)
		if err != nil {
			out = append(out, report.Problem{Kind: "workspace", Message: fmt.Sprintf("checking the host directory at %s for edits during the run: %s", m.target, report.OneLine(err.Error()))})
		}
		if n == 0 {
			continue
		}
		for i, p := range paths {
			paths[i], _ = overlay.EscapePath(p)
		}
		more := ""
		if n > len(paths) {
			more = fmt.Sprintf(" and %d more", n-len(paths))
		}
		out = append(out, report.Problem{Kind: "workspace-host-changed", Message: fmt.Sprintf(
			"the host directory at %s changed during the run (not by the server; what it saw may include these): %s%s", m.target, strings.Join(paths, ", "), more)})
	}
	return out
}

// maxHostEdits bounds the host edits named in the report.
const maxHostEdits = 20

func (s *Session) teardownErr(errs []error) error {
	err := errors.Join(errs...)
	if err != nil {
		s.Problem("teardown", 0, "%s", report.OneLine(err.Error()))
	}
	return err
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// asInfra keeps an *InfraError as it is and wraps anything else as one.
func asInfra(err error, doing string) error {
	var ie *InfraError
	if errors.As(err, &ie) {
		return err
	}
	return &InfraError{Cause: doing + ": " + err.Error(), Err: err}
}

// closeSession closes the MCP session without waiting forever on a server
// that ignores stdin's end.
func closeSession(cs *mcp.ClientSession) {
	done := make(chan struct{})
	go func() { cs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
