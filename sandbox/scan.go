package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// ScanOptions configures a scan.
type ScanOptions struct {
	Image  string
	Argv   []string
	Env    []string
	Mounts []Mount
	// Workspace is a host directory the server sees at /workspace; it is
	// never modified. Empty means a fresh empty workspace.
	Workspace string
	Probes    []probes.Step
	Limits    Limits
	// Timeout bounds the whole run; StartTimeout the start and initialize;
	// CallTimeout each call.
	Timeout, StartTimeout, CallTimeout time.Duration
	RunID                              string
	// Keep leaves the container in place (stopped) for debugging.
	Keep bool
	// Log, if set, receives progress lines.
	Log io.Writer
	// ClientVersion is sent in the initialize request's clientInfo.
	ClientVersion string
	// Changes picks how file effects are read: ChangesAuto (default),
	// ChangesUpperDir or ChangesAPI.
	Changes string
	// FileLimits bound each snapshot of the changes; MaxListed bounds the
	// files listed per call or phase (default 1000; the rest are counted).
	FileLimits overlay.Limits
	MaxListed  int
	// Agent is the host path of the static agent binary that records
	// processes and network attempts; empty runs without it.
	Agent string
	// Network is none (default), sinkhole, bridge or host.
	Network string
	// Settle bounds the wait, after a call, while processes it left behind
	// still run (default 2s).
	Settle time.Duration
	// MaxEvents bounds the agent's events (default 100,000).
	MaxEvents int
	// NoSeed leaves out the canary workspace and the honeytokens.
	NoSeed bool
	// Negatives also calls each tool with inputs that break its schema,
	// one rule at a time.
	Negatives bool
	// Isolation is "session" (default: one container, calls in order) or
	// "call" (a fresh container from the same starting state for each call,
	// so that one tool's deletions cannot hide another's effects).
	Isolation string

	// For call isolation: stop after planning, run this plan instead, and
	// plant these tokens.
	listOnly bool
	plan     []probes.Call
	tokens   *probes.Honeytokens
}

// Result is what a scan returns besides the report.
type Result struct {
	Report      *report.Report
	Transcript  *Transcript
	ContainerID string // set when Keep left a container behind

	plan []probes.Call // with listOnly: the calls planned
}

// ProtocolVersion is the MCP version the scan asks for; servers may answer
// with an older one they support.
const ProtocolVersion = "2025-11-25"

// ErrIncomplete marks a scan that could not run every step: the server did
// not start or died, the run timed out or was interrupted. The report is
// partial but still written.
var ErrIncomplete = errors.New("scan incomplete")

// Scan starts the server in a sandbox, initializes it, lists its tools,
// calls them, and reports. It always returns a report, partial on error;
// the error wraps ErrIncomplete or is an *InfraError when the scan could
// not run every step.
func Scan(ctx context.Context, cli Engine, opts ScanOptions) (res Result, err error) {
	if opts.RunID == "" {
		opts.RunID = label.NewRunID()
	}
	switch opts.Isolation {
	case "", "session":
	case "call":
		return scanPerCall(ctx, cli, opts)
	default:
		return Result{Report: report.New()}, &InfraError{Cause: fmt.Sprintf("unknown isolation %q", opts.Isolation), Fix: "use session or call"}
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	setDefault(&opts.Timeout, 10*time.Minute)
	setDefault(&opts.StartTimeout, 60*time.Second)
	setDefault(&opts.CallTimeout, 30*time.Second)
	setDefault(&opts.Settle, 2*time.Second)
	if opts.Network == "" {
		opts.Network = "none"
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}

	rep := report.New()
	res = Result{Report: rep, Transcript: NewTranscript(32 << 20)}
	rep.Server.Command = append([]string{}, opts.Argv...)
	rep.Server.Image = opts.Image
	rep.Sandbox = report.Sandbox{Network: opts.Network, Agent: opts.Agent != "", User: "10001:10001", Isolation: "session",
		PidsLimit: opts.Limits.Pids, MemoryMB: opts.Limits.MemoryMB, CPUs: opts.Limits.CPUs, Workspace: "empty"}
	started := time.Now()
	defer func() {
		// Last, after teardown: the deterministic form, with what differs
		// between runs in Timing.
		rep.Timing = &report.Timing{StartedAt: started.UTC().Format(time.RFC3339), DurationMs: time.Since(started).Milliseconds()}
		rep.Normalize()
		rep.Finish()
	}()
	switch opts.Network {
	case "none", "sinkhole":
	case "bridge", "host":
		rep.Problems = append(rep.Problems, report.Problem{Kind: "network",
			Message: fmt.Sprintf("--network %s: the server could reach other machines; nothing in this report proves it did not leave", opts.Network)})
	default:
		return res, &InfraError{Cause: fmt.Sprintf("unknown network mode %q", opts.Network), Fix: "use none, sinkhole, bridge or host"}
	}
	if opts.Network == "sinkhole" && opts.Agent == "" {
		return res, &InfraError{Cause: "--network sinkhole needs the agent", Fix: "build it with `make build` or pass --agent"}
	}

	interrupted := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// why says why the run stopped early, for the problems list.
	why := func() report.Problem {
		if interrupted.Err() != nil {
			return report.Problem{Kind: "interrupted", Message: "the run was interrupted (" + context.Cause(interrupted).Error() + ")"}
		}
		return report.Problem{Kind: "run-timeout", Message: fmt.Sprintf("the run exceeded --timeout %s", opts.Timeout)}
	}

	if removed, err := Reap(ctx, cli); err != nil {
		rep.Problems = append(rep.Problems, report.Problem{Kind: "reap", Message: err.Error()})
	} else if len(removed) > 0 {
		logf("removed %d container(s) left by runs that died", len(removed))
	}

	image := opts.Image
	if opts.Workspace != "" {
		rep.Sandbox.Workspace = "host"
		logf("preparing workspace image from %s", opts.Workspace)
		ref, skipped, err := WorkspaceImage(ctx, cli, opts.Image, opts.Workspace, opts.RunID)
		for _, s := range skipped {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "workspace", Message: "special file not copied into the workspace: " + s})
		}
		if err != nil {
			return res, asInfra(err, "preparing the workspace")
		}
		image = ref
	}

	startCtx, startCancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer startCancel()
	var tokens probes.Honeytokens
	env := append([]string{}, opts.Env...)
	if !opts.NoSeed {
		tokens = probes.NewHoneytokens()
		if opts.tokens != nil {
			tokens = *opts.tokens
		}
		env = append(tokens.Env(), env...)
	}
	if opts.MaxListed <= 0 {
		opts.MaxListed = 1000
	}
	rec := &recorder{maxListed: opts.MaxListed, ignore: mountPoints(append(opts.Mounts, Mount{Target: AgentPath}))}
	// Before the server starts: the canary files and honeytokens go in, and
	// the state with them is the baseline every effect is measured from.
	beforeStart := func(ctx context.Context, id string) error {
		if !opts.NoSeed {
			if err := seed(ctx, cli, id, probes.Seeds(tokens), opts.Workspace); err != nil {
				return err
			}
		}
		src, how, err := newChangeSource(ctx, cli, id, image, opts.Changes, opts.RunID, opts.FileLimits)
		if err != nil {
			return asInfra(err, "reading the container's changes")
		}
		rec.src, rep.Sandbox.Changes = src, how
		base, err := src.Snapshot(ctx)
		if err != nil {
			return asInfra(err, "reading the container's changes")
		}
		rec.prev = base
		return nil
	}
	logf("starting %s in %s", strings.Join(opts.Argv, " "), image)
	ctr, err := Start(startCtx, cli, ContainerOptions{Image: image, Argv: opts.Argv, Env: env,
		Mounts: opts.Mounts, Limits: opts.Limits, RunID: opts.RunID, keep: opts.Keep,
		Agent: opts.Agent, Network: opts.Network, MaxEvents: opts.MaxEvents, BeforeStart: beforeStart})
	if err != nil {
		if rec.src != nil {
			err = errors.Join(err, rec.src.Close(context.WithoutCancel(ctx)))
		}
		if ctx.Err() != nil {
			rep.Problems = append(rep.Problems, why())
		}
		return res, err
	}
	noise := &noiseFilter{maxKeep: 5}
	defer func() {
		err = errors.Join(err, teardown(ctx, ctr, rec, rep, noise, opts.Keep, &res))
	}()
	if opts.Agent != "" {
		rec.pn = newProcNet(ctr.events, opts.Network == "none" || opts.Network == "sinkhole")
		if !opts.NoSeed {
			rec.pn.secrets = tokens.Find
		}
	}
	// phase closes a stretch of the run that is not a call; "between" is
	// kept only when something happened in it.
	phase := func(name string, after int) {
		eff, err := rec.mark(context.WithoutCancel(ctx), false)
		if err != nil {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "effects", Call: after, Message: "reading file effects: " + oneLine(err.Error())})
		}
		if name == "between" && empty(eff) {
			return
		}
		rep.Phases = append(rep.Phases, report.Phase{Name: name, After: after, Effects: eff})
	}
	if rec.pn != nil {
		// Startup ends once the server runs, so that its own exec is always
		// a startup effect.
		ctr.events.waitExec(ctx, opts.StartTimeout)
	}
	phase("startup", 0)

	pr, pw := io.Pipe()
	go noise.filter(ctr.Stdout(), pw, mcp.DefaultMaxLineLength)
	transport := recordingTransport{Transport: &mcp.IOTransport{Reader: pr, Writer: ctr.Stdin()}, t: res.Transcript}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsandbox", Version: opts.ClientVersion},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(startCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		// Under the agent a command that is not there is the child's exit
		// 127 (126: not executable), not a start error from the engine.
		if st, serr := ctr.State(context.WithoutCancel(ctx)); serr == nil && !st.Running && opts.Agent != "" && (st.ExitCode == 127 || st.ExitCode == 126) {
			tail, _, _ := ctr.Stderr()
			return res, &InfraError{Cause: fmt.Sprintf("the server command %q is not found or not executable in image %s (%s)", opts.Argv[0], image, oneLine(lastLine(tail))),
				Fix: "check the command, or mount it with --mount", Err: err}
		}
		switch {
		case interrupted.Err() != nil || ctx.Err() != nil:
			rep.Problems = append(rep.Problems, why())
		case startCtx.Err() != nil:
			rep.Problems = append(rep.Problems, report.Problem{Kind: "timeout", Message: fmt.Sprintf("the server did not answer initialize within %s", opts.StartTimeout)})
		default:
			rep.Problems = append(rep.Problems, report.Problem{Kind: "protocol", Message: "initialize failed: " + err.Error()})
		}
		return res, fmt.Errorf("%w: the server did not start: %v", ErrIncomplete, err)
	}
	defer closeSession(cs)
	startCancel()
	phase("initialize", 0)

	init := cs.InitializeResult()
	rep.Server.ProtocolVersion = init.ProtocolVersion
	if raw := res.Transcript.Results("initialize"); len(raw) > 0 {
		var ir struct {
			ServerInfo   json.RawMessage `json:"serverInfo"`
			Capabilities json.RawMessage `json:"capabilities"`
			Instructions string          `json:"instructions"`
		}
		if json.Unmarshal(raw[0], &ir) == nil {
			rep.Server.ServerInfo, rep.Server.Capabilities, rep.Server.Instructions = ir.ServerInfo, ir.Capabilities, ir.Instructions
		}
	}
	logf("initialized %s (protocol %s)", rep.Server.ServerInfo, init.ProtocolVersion)

	if err := listTools(ctx, cs, res.Transcript, rep, opts.CallTimeout); err != nil {
		if ctx.Err() != nil {
			rep.Problems = append(rep.Problems, why())
		} else {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "protocol", Message: "tools/list failed: " + err.Error()})
		}
		return res, fmt.Errorf("%w: listing tools: %v", ErrIncomplete, err)
	}
	logf("listed %d tool(s)", len(rep.Tools))
	phase("tools/list", 0)

	ptools := make([]probes.Tool, len(rep.Tools))
	isTrue := func(b *bool) bool { return b != nil && *b }
	for i, t := range rep.Tools {
		ptools[i] = probes.Tool{Name: t.Name, InputSchema: t.InputSchema, Idempotent: isTrue(t.Hints.Idempotent),
			ReadOnly: isTrue(t.Hints.ReadOnly), NonDestructive: t.Hints.Destructive != nil && !*t.Hints.Destructive}
	}
	plan, skips, unknown := probes.Plan(ptools, opts.Probes)
	if opts.Negatives {
		plan = probes.WithNegatives(ptools, plan)
	}
	if opts.plan != nil {
		plan, skips, unknown = opts.plan, nil, nil
	}
	if opts.listOnly {
		res.plan = plan
		plan = nil
	}
	for _, s := range skips {
		rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: s.Reason})
	}
	for _, u := range unknown {
		rep.Problems = append(rep.Problems, report.Problem{Kind: "probe", Message: fmt.Sprintf("the probes name tool %q, which the server does not list", u)})
	}
	for i, step := range plan {
		if ctx.Err() != nil {
			rep.Problems = append(rep.Problems, why())
			for _, s := range plan[i:] {
				rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: "not reached: " + why().Message})
			}
			return res, fmt.Errorf("%w: %s", ErrIncomplete, why().Message)
		}
		seq := len(rep.Calls) + 1
		phase("between", seq-1)
		logf("call %d: %s %s", seq, step.Tool, step.Arguments)
		call := callTool(ctx, cs, seq, step, opts.CallTimeout)
		call.Negative = step.Negative
		eff, err := rec.mark(context.WithoutCancel(ctx), true)
		if err != nil {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "effects", Call: seq, Message: "reading file effects: " + oneLine(err.Error())})
		}
		call.Effects = eff
		if bg := rec.pn.background(); len(bg) > 0 && call.ErrorKind != "transport" {
			// Let what the call left running finish, so that its effects land
			// in a "between" phase after this call, not on the next one.
			logf("call %d left %d process(es) running; settling up to %s", seq, len(bg), opts.Settle)
			if left := rec.pn.settle(ctx, opts.Settle); len(left) > 0 {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "background", Call: seq,
					Message: fmt.Sprintf("%d process(es) started by call %d still ran after --settle %s; what they do later is attributed to later phases", len(left), seq, opts.Settle)})
			}
		}
		rep.Calls = append(rep.Calls, call)
		if step.ExpectError && step.Negative == "" && call.ErrorKind == "" && !call.IsError {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "probe", Call: seq, Message: fmt.Sprintf("call %d to %s was expected to fail and succeeded", seq, step.Tool)})
		}
		if call.ErrorKind == "interrupted" {
			rep.Problems = append(rep.Problems, why())
			for _, s := range plan[i+1:] {
				rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: "not reached: " + why().Message})
			}
			return res, fmt.Errorf("%w: %s", ErrIncomplete, why().Message)
		}
		if call.ErrorKind == "timeout" {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "timeout", Call: seq, Message: call.Error})
			// One stuck handler is the tool's problem; a server that answers
			// nothing at all (stdout closed, wedged) ends the scan instead of
			// costing a timeout per remaining call.
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			perr := cs.Ping(pctx, nil)
			cancel()
			if perr != nil && ctx.Err() == nil {
				msg := fmt.Sprintf("the server stopped answering after call %d (not even ping): stdout closed or the server is wedged", seq)
				rep.Problems = append(rep.Problems, report.Problem{Kind: "unresponsive", Call: seq, Message: msg})
				for _, s := range plan[i+1:] {
					rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: "not reached: " + msg})
				}
				return res, fmt.Errorf("%w: %s", ErrIncomplete, msg)
			}
		}
		if call.ErrorKind == "transport" {
			// The connection is gone: the server died or closed stdout.
			msg := "the server closed the connection during call " + fmt.Sprint(seq)
			if st, err := ctr.State(context.WithoutCancel(ctx)); err == nil && !st.Running {
				msg = fmt.Sprintf("the server exited with code %d during call %d", st.ExitCode, seq)
				if st.OOMKilled {
					msg += " (killed by the memory limit)"
				}
			}
			rep.Problems = append(rep.Problems, report.Problem{Kind: "crash", Call: seq, Message: msg})
			for _, s := range plan[i+1:] {
				rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: s.Tool, Reason: "not reached: " + msg})
			}
			return res, fmt.Errorf("%w: %s", ErrIncomplete, msg)
		}
	}
	// What the last call left running did after it (settled above) is a
	// "between" phase of that call, not a teardown effect.
	phase("between", len(rep.Calls))
	rep.Complete = true
	return res, nil
}

func empty(e report.Effects) bool {
	return len(e.Files) == 0 && len(e.Processes) == 0 && len(e.Network) == 0 && e.FilesOmitted == 0 && !e.FilesTruncated
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

// teardown ends the server, keeps its last words for the report and
// removes the container (unless kept).
func teardown(ctx context.Context, ctr *Container, rec *recorder, rep *report.Report, noise *noiseFilter, keep bool, res *Result) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	if st, err := ctr.State(ctx); err != nil {
		errs = append(errs, err)
	} else if !st.Running {
		code := st.ExitCode
		rep.Server.ExitCode, rep.Server.OOMKilled = &code, st.OOMKilled
	}
	// The session is closed (stdin at EOF): give the server a moment to
	// exit on its own, so its exit status is its own, not our kill's.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := ctr.State(ctx); err != nil || !st.Running {
			break
		}
	}
	errs = append(errs, ctr.Stop(ctx))
	if rec != nil {
		// What the server (or what it left running) did since the last mark,
		// read before the container and its upper dir go away.
		eff, err := rec.mark(ctx, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading file effects at teardown: %w", err))
		}
		rep.Phases = append(rep.Phases, report.Phase{Name: "teardown", Effects: eff})
		if rec.src != nil {
			errs = append(errs, rec.src.Close(ctx))
		}
		rec.pn.fill(rep)
		if rec.pn != nil {
			started, dropped, agentErrs := ctr.events.status()
			if !started {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "agent", Message: "the agent never reported: processes and network attempts were not recorded"})
			}
			if dropped > 0 {
				rep.Sandbox.EventsDropped = dropped
				rep.Problems = append(rep.Problems, report.Problem{Kind: "agent", Message: fmt.Sprintf("%d agent events dropped over the bound (an event flood)", dropped)})
			}
			for _, e := range agentErrs {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "agent", Message: e})
			}
		}
	}
	rep.Server.StderrTail, rep.Server.StderrBytes, rep.Server.StderrTruncated = ctr.Stderr()
	rep.Server.StdoutNoise, rep.Server.StdoutNoiseSample = noise.snapshot()
	if rep.Server.StdoutNoise > 0 {
		rep.Problems = append(rep.Problems, report.Problem{Kind: "stdout-noise",
			Message: fmt.Sprintf("the server wrote %d line(s) to stdout that are not JSON-RPC; they were dropped (first: %s)", rep.Server.StdoutNoise, rep.Server.StdoutNoiseSample[0])})
	}
	if keep {
		res.ContainerID = ctr.ID
		ctr.release()
	} else {
		errs = append(errs, ctr.Close(ctx))
	}
	err := errors.Join(errs...)
	if err != nil {
		rep.Problems = append(rep.Problems, report.Problem{Kind: "teardown", Message: oneLine(err.Error())})
	}
	return err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listTools follows nextCursor through every page of tools/list and fills
// the report's tools from the raw results, so that annotations are kept
// exactly as sent.
func listTools(ctx context.Context, cs *mcp.ClientSession, t *Transcript, rep *report.Report, timeout time.Duration) error {
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page >= 1000 {
			return errors.New("more than 1000 pages of tools")
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := cs.ListTools(lctx, &mcp.ListToolsParams{Cursor: cursor})
		cancel()
		if err != nil {
			return err
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return fmt.Errorf("the server repeats cursor %q", res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	names := map[string]bool{}
	for _, raw := range t.Results("tools/list") {
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decoding tools/list result: %w", err)
		}
		for _, rt := range page.Tools {
			tool, err := decodeTool(rt)
			if err != nil {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "protocol", Message: err.Error()})
				continue
			}
			if names[tool.Name] {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "protocol", Message: fmt.Sprintf("tool %q is listed twice; the first is kept", tool.Name)})
				continue
			}
			names[tool.Name] = true
			rep.Tools = append(rep.Tools, tool)
		}
	}
	return nil
}

// decodeTool reads one raw tool, keeping annotations and schemas as sent
// and telling "not declared" from "declared false" for each hint.
func decodeTool(raw json.RawMessage) (report.Tool, error) {
	var t struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		Annotations  json.RawMessage `json:"annotations"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return report.Tool{}, fmt.Errorf("a listed tool does not decode: %v", err)
	}
	if t.Name == "" {
		return report.Tool{}, fmt.Errorf("a listed tool has no name: %s", raw)
	}
	tool := report.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
		Annotations: nullIfEmpty(t.Annotations), InputSchema: nullIfEmpty(t.InputSchema), OutputSchema: t.OutputSchema}
	if len(t.Annotations) > 0 && string(t.Annotations) != "null" {
		var h map[string]json.RawMessage
		if err := json.Unmarshal(t.Annotations, &h); err != nil {
			return tool, fmt.Errorf("tool %q: annotations are not an object: %v", t.Name, err)
		}
		tool.Hints = report.Hints{ReadOnly: boolHint(h["readOnlyHint"]), Destructive: boolHint(h["destructiveHint"]),
			Idempotent: boolHint(h["idempotentHint"]), OpenWorld: boolHint(h["openWorldHint"])}
		if tool.Title == "" {
			var title string
			if json.Unmarshal(h["title"], &title) == nil {
				tool.Title = title
			}
		}
	}
	return tool, nil
}

func nullIfEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// boolHint is a declared boolean hint, or nil when absent or not a boolean
// (a non-boolean hint is no claim).
func boolHint(raw json.RawMessage) *bool {
	var b bool
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}

// callTool makes one call and records its outcome.
func callTool(ctx context.Context, cs *mcp.ClientSession, seq int, step probes.Call, timeout time.Duration) report.Call {
	call := report.Call{Seq: seq, Tool: step.Tool, Arguments: step.Arguments, Source: step.Source, Effects: report.NewEffects()}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: step.Tool, Arguments: step.Arguments})
	call.DurationMs = time.Since(start).Milliseconds()
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		call.IsError = res.IsError
		call.Result = resultText(res)
	case errors.As(err, &rpcErr):
		call.Error, call.ErrorKind = fmt.Sprintf("JSON-RPC error %d: %s", rpcErr.Code, rpcErr.Message), "rpc"
	case cctx.Err() != nil && ctx.Err() == nil:
		call.Error, call.ErrorKind = fmt.Sprintf("no result within --call-timeout %s", timeout), "timeout"
	case ctx.Err() != nil:
		call.Error, call.ErrorKind = "the run ended during the call: "+context.Cause(ctx).Error(), "interrupted"
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe):
		call.Error, call.ErrorKind = err.Error(), "transport"
	default:
		// The SDK may reject a result (for example one that does not match
		// the tool's output schema); the server still answered.
		call.Error, call.ErrorKind = err.Error(), "client"
		if strings.Contains(err.Error(), "closed") {
			call.ErrorKind = "transport"
		}
	}
	return call
}

// resultText is the text of a result's content, bounded.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource link %s]", c.URI)
		case *mcp.EmbeddedResource:
			b.WriteString("[embedded resource]")
		default:
			fmt.Fprintf(&b, "[%T]", c)
		}
		if b.Len() > 4096 {
			break
		}
	}
	s := b.String()
	if len(s) > 4096 {
		s = s[:4096] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
