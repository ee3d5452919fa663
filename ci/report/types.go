package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SchemaVersion names the shape of the report.
const SchemaVersion = "mcpsandbox.report/v1.6"

// Report is everything one scan learned about one server.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// Complete is true when every planned step ran; false when the server
	// died, the run timed out or was interrupted (the report is partial).
	Complete  bool        `json:"complete"`
	Server    Server      `json:"server"`
	Sandbox   Sandbox     `json:"sandbox"`
	Tools     []Tool      `json:"tools"`
	Calls     []Call      `json:"calls"`
	NotCalled []NotCalled `json:"notCalled"`
	// Reads are the requests made of the server's other surfaces once its
	// tools were called: resources read, resource templates read, prompts
	// got, completions asked, each where the server declares the
	// capability; in the order made.
	Reads []Read `json:"reads"`
	// Coverage says, for each listed tool in the order of Tools, whether
	// it was exercised (a call returned a result that is not an error),
	// errored or not called: what the verdict on a tool is worth. Finish
	// computes it from Calls and NotCalled.
	Coverage []ToolCoverage `json:"coverage"`
	// Phases carries the effects of everything that is not a tool call:
	// startup, initialize, tools/list, between calls, teardown.
	Phases []Phase `json:"phases"`
	// ToolChanges lists what changed in the tool list while the server
	// ran, in the order the listings saw it: the tools are listed again
	// after every answered call and at the end of each session.
	ToolChanges []ToolChange `json:"toolChanges"`
	// ToolListing says how the tool list was watched, and where it could
	// not be.
	ToolListing ToolListing `json:"toolListing"`
	Findings    []Finding   `json:"findings"`
	// Problems are failures of the run or of the server that are not
	// contradictions: timeouts, crashes, garbage on stdout.
	Problems []Problem `json:"problems"`
	// Ignored counts the findings a policy dropped: nothing is dropped
	// silently.
	Ignored []Ignored `json:"ignored"`
	Summary Summary   `json:"summary"`
	// Rounds is set when the scan ran more than one round (--rounds N):
	// everything but the findings and problems is the first round's.
	Rounds *Rounds `json:"rounds,omitempty"`
	// Install is set when the package's lifecycle scripts and native
	// builds ran in a sandbox of their own before the scan (mcpsandbox
	// bulk): how, and how it ended. What they did is the phase named
	// "install", first in Phases (its process ids are the install's own).
	Install *Install `json:"install,omitempty"`
	// Timing holds everything that differs between two runs of the same
	// scenario (durations, real pids, the start time). Everything outside
	// it is deterministic: sorted, with no host paths or run ids.
	Timing *Timing `json:"timing,omitempty"`
}

// PhaseInstall names the phase of a sandboxed install (see Install).
const PhaseInstall = "install"

// Install is how a package was installed in a sandbox before its scan:
// npm's lifecycle scripts (preinstall, install, postinstall, node-gyp's
// implicit build) of the package and its dependencies, run offline in the
// build image against the tree the host fetched with scripts off.
type Install struct {
	// Command is what ran in the sandbox; Image the build image it ran in.
	Command []string `json:"command"`
	Image   string   `json:"image"`
	// Network is the install's network mode (sinkhole: nothing leaves).
	Network string `json:"network"`
	// Package is the directory the install builds in (the package tree,
	// /package): its writes there are the install's product, not
	// effects to judge.
	Package string `json:"package"`
	// Scripts names the packages with install scripts, NAME@VERSION
	// (node_modules path order), as the lockfile marks them.
	Scripts []string `json:"scripts"`
	// ExitCode is the command's exit status; absent when it was killed at
	// its bound (TimedOut).
	ExitCode *int `json:"exitCode,omitempty"`
	TimedOut bool `json:"timedOut,omitempty"`
	// StderrTail is the end of what the scripts wrote (npm's output is
	// sent there too), bounded as the server's is.
	StderrTail string `json:"stderrTail"`
	// Problems are the install sandbox's own (agent, effects, timeout).
	Problems []Problem `json:"problems"`
}

// Timing is the non-deterministic part of a report.
type Timing struct {
	StartedAt  string       `json:"startedAt"`
	DurationMs int64        `json:"durationMs"`
	Calls      []CallTiming `json:"calls"`
	// ToolListChanged counts the notifications/tools/list_changed the
	// server sent: they trigger nothing (every fixed point lists anyway),
	// and when one arrives is a matter of timing.
	ToolListChanged int `json:"toolListChanged,omitempty"`
	// PIDs maps the report's process ids (1 = the first process to run a
	// program, usually the server) to the pids the kernel gave.
	PIDs []PIDMap `json:"pids"`
	// BaitSeed drew this run's canary names and honeytoken values, which
	// the report shows as role placeholders ("<project>"); --bait-seed
	// repeats them. Absent when nothing was planted (--no-seed).
	BaitSeed *uint64 `json:"baitSeed,omitempty"`
	// DiskPeakBytes is the most disk use measured over the start, in
	// bytes (it varies with the timing of the polls against the writes).
	DiskPeakBytes int64 `json:"diskPeakBytes,omitempty"`
	// OverrunMs is how far past --timeout the run ended, when it did
	// (teardown and the container's removal come after the deadline).
	OverrunMs int64 `json:"overrunMs,omitempty"`
}

// CallTiming is how long one call took.
type CallTiming struct {
	Seq        int   `json:"seq"`
	DurationMs int64 `json:"durationMs"`
}

// PIDMap pairs a report process id with a real pid.
type PIDMap struct {
	ID  int `json:"id"`
	PID int `json:"pid"`
}

// Ignored is a finding a policy ignored.
type Ignored struct {
	Rule   string `json:"rule"`
	Tool   string `json:"tool"`
	Call   int    `json:"call,omitempty"`
	Reason string `json:"reason"` // which ignore matched
	// Evidence counts the evidence items dropped (when only some were).
	Evidence int `json:"evidence"`
}

// Server describes the server under test, as it started and ended.
type Server struct {
	Command []string `json:"command"`
	// Package is the registry package a launcher line named (npx -y PKG),
	// as it was fetched: Command then runs it from where it was installed.
	Package         *PackageSource `json:"package,omitempty"`
	Image           string         `json:"image"`
	ProtocolVersion string         `json:"protocolVersion"`
	// ServerInfo is the initialize result's serverInfo, as sent.
	ServerInfo   json.RawMessage `json:"serverInfo"`
	Capabilities json.RawMessage `json:"capabilities"`
	Instructions string          `json:"instructions,omitempty"`
	// StderrTail is the end of what the server wrote to stderr (bounded);
	// StderrBytes counts all of it. StderrHead is its start (bounded),
	// kept when the tail does not reach back to it: the lines that say why
	// a server failed to start come first.
	StderrTail      string `json:"stderrTail"`
	StderrHead      string `json:"stderrHead,omitempty"`
	StderrBytes     int64  `json:"stderrBytes"`
	StderrTruncated bool   `json:"stderrTruncated"`
	// StderrDisclosed are the roles ("<aws-secret-access-key>") of the
	// planted secrets found anywhere in what the server wrote to stderr,
	// the whole stream (not only what is kept), or in its initialize
	// instructions: what reaches a client's logs or the model. Sorted;
	// never the values.
	StderrDisclosed []string `json:"stderrDisclosed,omitempty"`
	// SurfacesTruncated names the lists of the other surfaces
	// (resources/list, resources/templates/list, prompts/list) cut at a
	// bound (pages, bytes, items, a page refused over a message bound):
	// what was past it was neither read nor judged.
	SurfacesTruncated []string `json:"surfacesTruncated,omitempty"`
	// StdoutNoise counts stdout lines that were not JSON-RPC (dropped from
	// the MCP stream); StdoutNoiseSample keeps the first few.
	StdoutNoise       int      `json:"stdoutNoise"`
	StdoutNoiseSample []string `json:"stdoutNoiseSample"`
	// ExitCode is the server's exit status, if it exited before teardown.
	ExitCode *int `json:"exitCode,omitempty"`
	// OOMKilled is true when the memory limit killed the server.
	OOMKilled bool `json:"oomKilled,omitempty"`
	// MessagesRefused counts the messages from the server the client
	// refused over a bound (size, nesting): each is a protocol-bound
	// problem.
	MessagesRefused int `json:"messagesRefused,omitempty"`
	// ToolListTruncated is set when the tool list was cut at a bound
	// (pages, bytes, tools, a refused page, a name too long) or a tool's
	// inputSchema was replaced over the schema bound: some tools were
	// neither called nor judged (the tool-list-truncated finding).
	ToolListTruncated bool `json:"toolListTruncated,omitempty"`
	// Ambiguities are the places in the server's messages where two
	// mainstream JSON readers part (JSON.parse, Go's encoding/json,
	// Python's json: see docs/readers.md), in the order met, the first
	// MaxAmbiguities; AmbiguitiesOmitted counts the rest. Each raises
	// ambiguous-message.
	Ambiguities        []Ambiguity `json:"ambiguities,omitempty"`
	AmbiguitiesOmitted int         `json:"ambiguitiesOmitted,omitempty"`
	// Transport is how the server was reached, http (streamable HTTP) or
	// sse (HTTP+SSE); absent for stdio. Endpoint is the URL asked for,
	// as a client on the container's loopback would ask for it.
	Transport string `json:"transport,omitempty"`
	Endpoint  string `json:"endpoint,omitempty"`
}

// RuleAmbiguousMessage is the rule (ci/rules) that an Ambiguity raises,
// named here too so that a report's own text can name it.
const RuleAmbiguousMessage = "ambiguous-message"

// Ambiguity is one place in a server's message that two mainstream
// readers read otherwise: the judge read it one way, a client may act on
// another.
type Ambiguity struct {
	// Kind is how the readings part: duplicate-key, case-variant-key,
	// proto-key, non-finite-number, number-overflow, imprecise-integer,
	// lone-surrogate, invalid-utf8, byte-order-mark, trailing-data,
	// id-form, not-boolean.
	Kind string `json:"kind"`
	// Method is the request the message answers (tools/list), or the
	// server's own request or notification; "" when neither is known.
	Method string `json:"method,omitempty"`
	// Tool is the tool whose definition holds it, in a tool list.
	Tool string `json:"tool,omitempty"`
	// Path is where in the message ("result.tools[0].annotations"); Key
	// the key concerned, for the key kinds.
	Path   string `json:"path,omitempty"`
	Key    string `json:"key,omitempty"`
	Detail string `json:"detail"`
	// Refused: the line had no reading every strict reader takes (NaN,
	// trailing data, a byte-order mark), so the client was not given it.
	Refused bool `json:"refused,omitempty"`
}

// Where is the place as a finding's evidence says it: the path, then the
// key quoted ("result.tools[0]."ANNOTATIONS""), "the message" for none.
func (a Ambiguity) Where() string {
	where := a.Path
	if a.Key != "" {
		if where != "" {
			where += "."
		}
		where += strconv.Quote(a.Key)
	}
	if where == "" {
		where = "the message"
	}
	return where
}

// MaxAmbiguities bounds the ambiguities a report lists; the rest are
// counted (Server.AmbiguitiesOmitted).
const MaxAmbiguities = 256

// Sandbox records how the server was confined.
type Sandbox struct {
	// Network is none (loopback only), sinkhole (DNS and common TCP ports
	// answered on the loopback, nothing leaves), bridge or host.
	Network string `json:"network"`
	// AllowedHosts are the hosts the server could reach through the
	// runner (--allow-host HOST[:PORT]), sorted; every other address
	// stayed as Network says.
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	User         string   `json:"user"`
	Isolation    string   `json:"isolation"`
	PidsLimit    int64    `json:"pidsLimit"`
	MemoryMB     int64    `json:"memoryMB"`
	CPUs         float64  `json:"cpus"`
	// Workspace is "empty" or "host" (a copy of a host directory, never
	// written back).
	Workspace string `json:"workspace"`
	// WorkspaceBy says how a host workspace (and the package, if any)
	// reached the server: "mount" (copy-on-write over the host directory,
	// nothing copied) or "copy" (an image layer, when the kernel or engine
	// cannot mount it).
	WorkspaceBy string `json:"workspaceBy,omitempty"`
	// Package is where the server saw the host directory given with
	// --package (its code, writable copy-on-write like the workspace; its
	// changes are file effects), or "" without one.
	Package string `json:"package,omitempty"`
	// Changes says how file effects were read: "upperdir" (the overlayfs
	// upper dir, on the host) or "api" (the Engine API).
	Changes string `json:"changes"`
	// LingerMs is how long at least the scan kept observing after the
	// last call (--linger), unless the agent found nothing in the sandbox
	// that could act; longer, to LingerMaxMs, while what the calls set
	// off was pending.
	LingerMs int64 `json:"lingerMs"`
	// LingerMaxMs bounds the linger while something the calls set off
	// could still act (--linger-max); the linger ends at once when the
	// agent finds nothing in the sandbox that can act, and a thread that
	// waited before the first call with no time the agent can read is
	// watched for LingerMs. Zero without a linger. Past it, a linger-bound
	// problem and finding.
	LingerMaxMs int64 `json:"lingerMaxMs,omitempty"`
	// Replay is "findings" (a call whose effects raise a finding, for it
	// or for an earlier call of its session, is replayed to check that it
	// caused them) or "off" (--no-replay: every effect is the call's during
	// which it was seen).
	Replay string `json:"replay"`
	// Agent is true when the in-container agent recorded processes and
	// network attempts; without it those lists stay empty.
	Agent bool `json:"agent"`
	// EventsDropped counts agent events lost to the event bound (a flood):
	// what happened after is not fully recorded, and the gate fails.
	EventsDropped int `json:"eventsDropped,omitempty"`
	// EventsTruncated counts agent events cut at one of the agent's bounds
	// (an argv, a call's payload, a query's questions, a program too large
	// to hash, a frame): what they carried is not whole, and the gate fails.
	EventsTruncated int `json:"eventsTruncated,omitempty"`
	// HashBudget is the bytes one snapshot may read to hash files (files
	// held open for writing or mapped shared are hashed at every one).
	HashBudget int64 `json:"hashBudget,omitempty"`
	// FilesUnhashed counts, over every snapshot, the files whose content
	// the hash budget (or the run's deadline) did not cover: they were not
	// compared by content, and the gate fails.
	FilesUnhashed int `json:"filesUnhashed,omitempty"`
	// DiskLimit is the space, in bytes, the server's writes may hold
	// (--disk): the upper layer, the workspace's and package's changes,
	// /dev/shm, files deleted while held open.
	DiskLimit int64 `json:"diskLimit,omitempty"`
	// DiskExceeded is true when the writes passed DiskLimit: the server
	// was stopped there, and the gate fails.
	DiskExceeded bool `json:"diskExceeded,omitempty"`
	// MaxReport is the bound on the JSON report's bytes outside timing
	// (--max-report), given when the report was over it; ReportShed is the
	// bytes shed to come within it (see ShedStep), and the gate fails.
	MaxReport  int64 `json:"maxReport,omitempty"`
	ReportShed int64 `json:"reportShed,omitempty"`
}

// Tool is one tool as the server listed it.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	// Annotations are exactly as the server sent them (null when absent).
	Annotations json.RawMessage `json:"annotations"`
	// Hints are the four behaviour hints: true or false when the server
	// declared them, null when it did not (the spec's default then applies).
	Hints        Hints           `json:"hints"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Hints are the MCP tool annotation hints, nil when not declared.
type Hints struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
	Idempotent  *bool `json:"idempotentHint"`
	OpenWorld   *bool `json:"openWorldHint"`
}

// Call is one tools/call and what it caused.
type Call struct {
	Seq       int             `json:"seq"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Source says where the arguments came from: "probe" (the probes file),
	// "synth" (made from the input schema and validated against it),
	// "empty" ({}: the schema requires nothing), "repeat" (the previous
	// call again, to check idempotentHint), "negative" (see Negative),
	// "retry" (the next candidate arguments after the server refused the
	// call Retries names), "boundary" (see Boundary).
	Source string `json:"source"`
	// Retries is the seq of the attempt this call retries (source "retry"):
	// that call was refused as invalid (JSON-RPC -32602, or an isError
	// result that reads as a validation message).
	Retries int `json:"retries,omitempty"`
	// Setup is set on the calls of setup tools (names whose first word is
	// set, init, open, connect, create, start, login, begin, new...),
	// which run before the tools that read the state they make.
	Setup bool `json:"setup,omitempty"`
	// ValuesFrom are the seqs of the earlier calls whose results gave the
	// arguments' ids or names (see docs/probes.md).
	ValuesFrom []int `json:"valuesFrom,omitempty"`
	// Negative names the input-schema rule the arguments break, for the
	// calls --negatives makes (source "negative"): the tool should refuse
	// them and do nothing.
	Negative string `json:"negative,omitempty"`
	// Late is set on the calls of a tool that appeared during the session:
	// they come after the calls planned first, in the session where it
	// appeared (with --isolation call, the session of the call before).
	Late bool `json:"late,omitempty"`
	// Boundary is set on the boundary probes (source "boundary"): a path
	// property given a traversal out of the canary project, or a URL
	// property given a link-local or loopback URL (see docs/probes.md,
	// boundary probes). Their effects are judged by path-escape and ssrf-followed
	// (and secret-exfiltration), not by the hint rules.
	Boundary *Boundary `json:"boundary,omitempty"`
	// IsError is the result's isError flag.
	IsError bool `json:"isError"`
	// FailsBy is set when a result without isError says it failed anyway
	// (see ResultFailure): nested-iserror, success-false, error-field or
	// error-text. Such a call did not exercise its tool.
	FailsBy string `json:"failsBy,omitempty"`
	// Error is set when the call got no result: a JSON-RPC error, a timeout,
	// or the server going away. ErrorKind is "rpc", "timeout" or "transport".
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`
	// DurationMs is reported in Timing.Calls: it differs between runs.
	DurationMs int64 `json:"-"`
	// Result is the text of the result's content, bounded (4 KiB by
	// default). ResultBytes and ResultSha256 are the size and SHA-256 of
	// the whole result as sent (the JSON value of the response's
	// "result"), also when it was refused over a bound (ErrorKind
	// "client"); absent when there was no result.
	Result       string `json:"result"`
	ResultBytes  int64  `json:"resultBytes,omitempty"`
	ResultSha256 string `json:"resultSha256,omitempty"`
	// WholeBytes and WholeSha256 are ResultBytes and ResultSha256 for every
	// result, kept whole or not: what shedding the result text over the
	// report bound leaves in its place (not written themselves).
	WholeBytes  int64  `json:"-"`
	WholeSha256 string `json:"-"`
	// Disclosed are the roles ("<aws-secret-access-key>") of the planted
	// secrets found in the whole result as received (every content item,
	// structuredContent, embedded resources; not only Result), plain or
	// encoded: secrets handed to the model. Sorted; never the values.
	Disclosed []string `json:"disclosed,omitempty"`
	Effects   Effects  `json:"effects"`
	// Replay, when set, says how far the call's effects (with the
	// "between" phase after it) were checked by replaying the call; only
	// the effects it reproduced are the call's. Nil: not replayed, every
	// effect is the call's (no rule needed checking, or --no-replay).
	Replay *Replay `json:"replay,omitempty"`
}

// The surfaces a Read reads.
const (
	SurfaceResource   = "resource"   // resources/read of a listed resource
	SurfaceTemplate   = "template"   // resources/read of a URI made from a resource template
	SurfacePrompt     = "prompt"     // prompts/get
	SurfaceCompletion = "completion" // completion/complete
)

// Read is one request made of a surface other than tools. Each is by the
// specification a read (resources and prompts are data the client
// fetches, completion a suggestion), so any effect is the server's
// surprise: its effects are recorded as a call's are.
type Read struct {
	// Seq numbers the reads, from 1, in the order made.
	Seq int `json:"seq"`
	// Surface is SurfaceResource, SurfaceTemplate, SurfacePrompt or
	// SurfaceCompletion; Method the JSON-RPC method sent.
	Surface string `json:"surface"`
	Method  string `json:"method"`
	// Target is the resource's URI, the template's URI template, or the
	// prompt's name; for a completion, the prompt's name or the template
	// asked about.
	Target string `json:"target"`
	// URI is the URI read (a template's, with its variables filled in).
	URI string `json:"uri,omitempty"`
	// Arguments are the prompt's arguments, the template's variables, or
	// the completion's argument, as sent.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Error and ErrorKind are as a call's: no result.
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`
	// Result is the text of what was returned, bounded as a call's
	// (--max-result); ResultBytes and ResultSha256 are the whole result's
	// when it was not kept whole.
	Result       string `json:"result"`
	ResultBytes  int64  `json:"resultBytes,omitempty"`
	ResultSha256 string `json:"resultSha256,omitempty"`
	// Disclosed are the roles of the planted secrets in the whole result,
	// as a call's.
	Disclosed []string `json:"disclosed,omitempty"`
	// WholeBytes and WholeSha256 are the whole result's, kept whole or not
	// (for shedding; not written).
	WholeBytes  int64   `json:"-"`
	WholeSha256 string  `json:"-"`
	DurationMs  int64   `json:"-"`
	Effects     Effects `json:"effects"`
}

// Boundary is what a boundary probe tried, and what its result showed.
type Boundary struct {
	// Kind is path-file (read a file outside the root), path-dir (list a
	// directory outside it), path-dest (write a file outside it) or url
	// (fetch a link-local or loopback URL).
	Kind string `json:"kind"`
	// Property is the argument that carried the probe.
	Property string `json:"property"`
	// Target is the path the traversal names once resolved (a marker
	// planted outside the workspace, its directory, or a destination that
	// does not exist), or the URL.
	Target string `json:"target"`
	// Address and Port are where fetching the URL connects (port 0: any).
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
	// Returned is set when the result held what only following the path
	// shows: the marker file's secret content (path-file) or its name
	// (path-dir).
	Returned bool `json:"returned,omitempty"`
}

// Replay is the outcome of replaying one call: in a fresh container from
// the same starting state, with the calls of its session before it, the
// call and then the linger window; and beside it the same without the
// call (the control). An effect is reproduced when it happened with the
// call and not without it.
type Replay struct {
	// Status is "replayed", or "skipped" when the replay could not run (a
	// bound, an error: the problems say which): then nothing is pinned on
	// the call.
	Status string `json:"status"`
	// Reproduced are the keys (EffectKey) of the call's effects the replay
	// reproduced, sorted.
	Reproduced []string `json:"reproduced"`
	// Candidates are the calls that could have caused an effect seen
	// during this call: its session's calls up to it, in order.
	Candidates []int `json:"candidates"`
}

// Candidates are the calls that could have caused what was seen during
// the i-th call of r: the calls of its session up to it, in order. With
// call isolation a session holds one call, the repeats and retries after
// it and the late calls (of tools that appeared in it) after those.
func Candidates(r *Report, i int) []int {
	first := 0
	if r.Sandbox.Isolation == "call" {
		first = i
		for first > 0 && (r.Calls[first].Source == "repeat" || r.Calls[first].Source == "retry" || r.Calls[first].Late) {
			first--
		}
	}
	var out []int
	for _, c := range r.Calls[first : i+1] {
		out = append(out, c.Seq)
	}
	return out
}

// The keys of effects, which a replay compares: what happened, not when
// or by which process id.

// Key of a file change: its kind and path.
func (f FileChange) Key() string { return "file " + f.Change.String() + " " + f.Path }

// Key of a network attempt: what it reached and how.
func (n NetEvent) Key() string {
	return strings.Join([]string{"net", n.Kind, n.Host, n.Address, strconv.Itoa(n.Port), n.Protocol, n.Family, n.Method, n.Path}, " ")
}

// Key of a process: what ran, and whether it outlived its call.
func (p Process) Key() string {
	return fmt.Sprintf("proc %q background=%v", p.Argv, p.Background)
}

// Effects are the side effects observed during one call or phase.
type Effects struct {
	Files []FileChange `json:"files"`
	// FilesOmitted counts changes past the listing bound; FilesTruncated is
	// set when the change walk itself stopped at its bound (a flood).
	FilesOmitted   int  `json:"filesOmitted,omitempty"`
	FilesTruncated bool `json:"filesTruncated,omitempty"`
	// FilesUnhashed counts the files this snapshot did not compare by
	// content, over the hash budget (the problems name them).
	FilesUnhashed int        `json:"filesUnhashed,omitempty"`
	Processes     []Process  `json:"processes"`
	Network       []NetEvent `json:"network"`
	// Tamper lists the calls the server aimed at the sandbox's agent (PID
	// 1): its resource limits, scheduling or CPUs, which the kernel lets a
	// process of the same user change. Each was refused (EPERM).
	Tamper []Tamper `json:"tamper,omitempty"`
}

// Empty reports whether nothing was seen: no file, process or network
// attempt, none omitted, unhashed or cut off. (A refused tamper is the
// agent's to tell, not an effect a quiet call lacks.)
func (e Effects) Empty() bool {
	return len(e.Files) == 0 && len(e.Processes) == 0 && len(e.Network) == 0 && e.FilesOmitted == 0 && !e.FilesTruncated && e.FilesUnhashed == 0
}

// Tamper is one refused call aimed at the agent.
type Tamper struct {
	PID int `json:"pid"`
	// Call names the call and its target, as "prlimit64 RLIMIT_CPU of
	// the agent" or "setpriority of the agent's user".
	Call   string `json:"call"`
	Result string `json:"result"` // EPERM
}

// FileChange is one created, modified or deleted path.
type FileChange struct {
	// Path is escaped (\n, \xff, ...) when PathEscaped is set: the name
	// held bytes that are not printable UTF-8.
	Path         string     `json:"path"`
	PathEscaped  bool       `json:"pathEscaped,omitempty"`
	Change       ChangeKind `json:"change"`
	Type         string     `json:"type"`           // file, dir, symlink, other
	Scope        string     `json:"scope"`          // workspace, outside
	Area         string     `json:"area,omitempty"` // for outside: tmp, home, system, shm, ipc, other
	Size         int64      `json:"size,omitempty"`
	Mode         string     `json:"mode,omitempty"` // octal permission bits
	SHA256       string     `json:"sha256,omitempty"`
	SHA256Before string     `json:"sha256Before,omitempty"`
	LinkTarget   string     `json:"linkTarget,omitempty"`
	// Appended is set on a modified file that only grew: its earlier bytes
	// are unchanged (upperdir only).
	Appended bool `json:"appended,omitempty"`
	// LinesKept is set on a modified text file, old and new within the
	// line bound (1 MiB), whose new content keeps every old line, in
	// order: an append-only store rewritten whole (upperdir only).
	LinesKept bool `json:"linesKept,omitempty"`
	// ContentKept is set on a modified JSON or JSON-lines file, not
	// LinesKept, old and new within the line bound, whose new values hold
	// every old one: members, array elements and records only added
	// (upperdir only).
	ContentKept bool `json:"contentKept,omitempty"`
}

// Process is one program a process ran (an execve).
type Process struct {
	PID  int      `json:"pid"`
	PPID int      `json:"ppid"`
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd,omitempty"`
	// Exe is the program that really ran, whatever argv[0] says: its path
	// in the container (the interpreter, for a script), or "/memfd:NAME
	// (deleted)" for one run from memory. ExeSHA256 is its content's.
	Exe       string `json:"exe,omitempty"`
	ExeSHA256 string `json:"exeSha256,omitempty"`
	// Anonymous is set for a program with no file left behind: a memfd, or
	// a file deleted before or after the exec.
	Anonymous bool `json:"anonymous,omitempty"`
	// Truncated is set when the argv (or the program, too large to hash)
	// hit one of the agent's bounds.
	Truncated bool `json:"truncated,omitempty"`
	// ExecError is set when the execve failed (an errno name).
	ExecError string `json:"execError,omitempty"`
	// ExitCode is set once the process ended (128+n for signal n).
	ExitCode *int `json:"exitCode,omitempty"`
	// Background is set when the process outlived the call that started
	// it and, when the runner settled after the call, was still alive at
	// the end of --settle: one that ended within the window is not.
	Background bool `json:"background,omitempty"`
}

// NetEvent is one network attempt, or what the sinkhole saw of it.
type NetEvent struct {
	// Kind is dns (a query: Host), connect (a connection or a datagram
	// sent), listen (a listening socket), http or tls (a request the
	// sinkhole answered: Method, Host, Path; or a TLS ClientHello's SNI),
	// socket (a socket of a refused family: Family, Result EAFNOSUPPORT).
	Kind     string `json:"kind"`
	PID      int    `json:"pid,omitempty"`
	Host     string `json:"host,omitempty"`
	Address  string `json:"address,omitempty"`
	Port     int    `json:"port,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Family is the socket family of a refused socket (vsock, packet,
	// alg, bluetooth, netlink:N, ...).
	Family string `json:"family,omitempty"`
	// Result is ok, an errno name (ECONNREFUSED, ENETUNREACH, ...),
	// EINPROGRESS for a non-blocking connect, "sinkholed:..." when the
	// sinkhole took the connection, nxdomain or sinkholed for DNS.
	Result string `json:"result,omitempty"`
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Loopback is set when the address is the container's own.
	Loopback bool `json:"loopback,omitempty"`
	// Secrets names the honeytokens planted for this run that this attempt
	// carried (in a DNS name, an HTTP request, or a payload).
	Secrets []string `json:"secrets,omitempty"`
	// Unreadable is set when the agent could not read the call's address
	// or data (a non-dumpable process): it refused the call (EACCES).
	Unreadable bool `json:"unreadable,omitempty"`
	// Truncated is set when what the call sent passed the agent's bound
	// (64 KiB per call, 64 questions per query): secrets were looked for
	// in what was read only.
	Truncated bool `json:"truncated,omitempty"`
}

// NotCalled is a listed tool that was not called, with the reason.
type NotCalled struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Phase is a stretch of the run that is not a tool call.
type Phase struct {
	Name string `json:"name"` // startup, initialize, tools/list, between, teardown
	// After names the call a "between" phase follows.
	After   int     `json:"after,omitempty"`
	Effects Effects `json:"effects"`
}

// ToolChange is one difference between two listings of the tools in one
// session, or between a call session's first listing and the first
// session's (--isolation call).
type ToolChange struct {
	// Listing is where the listing that saw the change was made:
	// ListingAfterCall (right after call Call returned), ListingEnd (at the
	// end of the session, before teardown; Call is the session's last call,
	// 0 for none) or ListingSessionStart (--isolation call: the first
	// listing of the session opened for call Call).
	Listing string `json:"listing"`
	Call    int    `json:"call,omitempty"`
	Tool    string `json:"tool"`
	// Change is ToolAppeared, ToolDisappeared or ToolChanged.
	Change string `json:"change"`
	// Field names what changed, for ToolChanged: "title", "description",
	// "inputSchema", "outputSchema", "annotations" (when either side is
	// not an object) or "annotations.KEY" (readOnlyHint, ...).
	Field string `json:"field,omitempty"`
	// Old and New are the field's values as canonical JSON (keys sorted),
	// left out when the field was absent; cut at MaxChangeValue bytes
	// (Truncated) for display: the comparison used them whole.
	Old       string `json:"old,omitempty"`
	New       string `json:"new,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// What a ToolChange says changed.
const (
	ToolAppeared    = "appeared"
	ToolDisappeared = "disappeared"
	ToolChanged     = "changed"
)

// Where the listing that saw a ToolChange was made.
const (
	ListingAfterCall    = "after-call"
	ListingEnd          = "end"
	ListingSessionStart = "session-start"
)

// ListingWhere says where a listing was made, in words: "after call 3",
// "at the end (after call 5)", "at the start of call 4's session".
func ListingWhere(listing string, call int) string {
	switch listing {
	case ListingAfterCall:
		return fmt.Sprintf("after call %d", call)
	case ListingEnd:
		if call == 0 {
			return "at the end"
		}
		return fmt.Sprintf("at the end (after call %d)", call)
	case ListingSessionStart:
		return fmt.Sprintf("at the start of call %d's session", call)
	}
	return listing
}

// MaxChangeValue bounds ToolChange.Old and New in the report.
const MaxChangeValue = 1024

// ToolListing is how the tool list was watched during the scan.
type ToolListing struct {
	// Listings counts the tools/list answered: the first, one after each
	// answered call, one at the end of each session (and, with
	// --isolation call, one at the start of each call's session).
	Listings int `json:"listings"`
	// Unchecked says, one line each, where the list could not be checked:
	// a listing that failed (the session lists no more after it), a bound
	// hit (late tools not called, changes not listed). Each fails the
	// default gate (tool-list-unchecked).
	Unchecked []string `json:"unchecked"`
}

// Finding is a contradiction between what a tool claimed and what it did,
// or a policy breach.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Tool     string   `json:"tool"`
	Call     int      `json:"call,omitempty"`
	// Hint is the annotation the finding contradicts, as the server sent it
	// (for example "readOnlyHint: true"); empty for rules that hold
	// whatever the hints.
	Hint    string `json:"hint,omitempty"`
	Message string `json:"message"`
	// Evidence names what happened: paths, argv, addresses.
	Evidence []string `json:"evidence"`
	// EvidencePaths holds, item for item, the path each evidence item names
	// ("" for none), for a policy's path ignores. Not in the JSON.
	EvidencePaths []string `json:"-"`
	// Fingerprint identifies the finding across runs (see Fingerprint);
	// baselines, SARIF and JUnit carry it.
	Fingerprint string `json:"fingerprint"`
	// Baselined is set when a baseline accepts the finding: it is reported
	// but does not fail the gate.
	Baselined bool `json:"baselined,omitempty"`
	// Isolation is the mode that produced the evidence: session or call.
	Isolation string `json:"isolation,omitempty"`
	// Rounds lists, with --rounds N (N > 1), the rounds that saw the
	// finding, ascending; its call, message and evidence are those of the
	// first of them. Absent for a single round.
	Rounds []int `json:"rounds,omitempty"`
	// Calls, on a server-level finding of effects the server makes
	// whatever the tool (see rules.ServerOwned), lists the calls it spans,
	// in order. Not in the fingerprint.
	Calls []int `json:"calls,omitempty"`
}

// Rounds says how a report of several rounds (--rounds N) was made: N
// scans in fresh containers, the first round's report as the base, the
// findings merged over all rounds by fingerprint.
type Rounds struct {
	// Run counts the rounds scanned.
	Run int `json:"run"`
	// Unstable are the fingerprints of the findings that not every round
	// saw, sorted: a server that behaves differently from run to run, or
	// a scan that does not see the same thing each time.
	Unstable []string `json:"unstable"`
}

// Problem is a failure of the run or the server.
type Problem struct {
	Kind    string `json:"kind"` // timeout, crash, stdout-noise, protocol, interrupted, run-timeout, probe, teardown, agent, sandbox-lost
	Call    int    `json:"call,omitempty"`
	Message string `json:"message"`
	// Round is the round that met the problem, with --rounds N (N > 1);
	// its call is one of that round's.
	Round int `json:"round,omitempty"`
}

// ProblemLingerBound is the kind of the problem of a linger that reached
// its cap (--linger-max) with something the calls set off still able to
// act; the linger-bound rule raises a finding on it.
const ProblemLingerBound = "linger-bound"

// ProblemJournal is the kind of the problem of file changes the change
// journal did not tell, found by the teardown's walk; the journal-missed
// rule raises a finding on it.
const ProblemJournal = "journal"

// PackageSource is a package a launcher line named, resolved and fetched
// on the host with none of its code run (the fetch of mcpsandbox bulk).
type PackageSource struct {
	// Line is the command as given (npx -y PKG ARG...).
	Line []string `json:"line"`
	// Registry is "npm" or "pypi"; Name and Version what it resolved to (the
	// version pinned), Integrity the registry's, which the download
	// matched.
	Registry  string `json:"registry"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
	// Entry is what of the package runs, and why it was chosen (the bin
	// the README's client configuration runs, the one named like the
	// package, a console script...).
	Entry *PackageEntry `json:"entry,omitempty"`
}

// PackageEntry is the entry point chosen in a fetched package.
type PackageEntry struct {
	// Path is the file, relative to the package; Bin the bin (or console
	// script) it is, if any; Why, why it was chosen.
	Path string `json:"path"`
	Bin  string `json:"bin,omitempty"`
	Why  string `json:"why"`
}

// Summary counts what the report holds.
type Summary struct {
	Tools     int `json:"tools"`
	Calls     int `json:"calls"`
	NotCalled int `json:"notCalled"`
	Findings  int `json:"findings"`
	Problems  int `json:"problems"`
	Ignored   int `json:"ignored"`
	Baselined int `json:"baselined"`
	// Exercised and Errored count the tools Coverage says were exercised
	// and errored; the rest of Tools were not called.
	Exercised int `json:"exercised"`
	Errored   int `json:"errored"`
	// BySeverity counts findings per severity, baselined ones left out.
	BySeverity map[string]int `json:"bySeverity"`
	// Unstable counts the findings that not every round saw (--rounds N,
	// N > 1; see Rounds).
	Unstable int `json:"unstable,omitempty"`
}

// New returns an empty report with every array present.
func New() *Report {
	return &Report{
		SchemaVersion: SchemaVersion,
		Server:        Server{Command: []string{}, StdoutNoiseSample: []string{}},
		Tools:         []Tool{},
		Calls:         []Call{},
		NotCalled:     []NotCalled{},
		Reads:         []Read{},
		Coverage:      []ToolCoverage{},
		Phases:        []Phase{},
		ToolChanges:   []ToolChange{},
		ToolListing:   ToolListing{Unchecked: []string{}},
		Findings:      []Finding{},
		Problems:      []Problem{},
		Ignored:       []Ignored{},
	}
}

// NewEffects returns effects with every array present.
func NewEffects() Effects {
	return Effects{Files: []FileChange{}, Processes: []Process{}, Network: []NetEvent{}}
}

// Finish recomputes the coverage and the summary.
func (r *Report) Finish() {
	r.Coverage = Coverage(r)
	s := Summary{Tools: len(r.Tools), Calls: len(r.Calls), NotCalled: len(r.NotCalled),
		Findings: len(r.Findings), Problems: len(r.Problems), Ignored: len(r.Ignored), BySeverity: map[string]int{}}
	for _, f := range r.Findings {
		if f.Baselined {
			s.Baselined++
			continue
		}
		s.BySeverity[f.Severity.String()]++
	}
	if r.Rounds != nil {
		r.Rounds.Unstable = []string{}
		seen := map[string]bool{}
		for _, f := range r.Findings {
			if len(f.Rounds) >= r.Rounds.Run {
				continue
			}
			s.Unstable++
			if !seen[f.Fingerprint] {
				seen[f.Fingerprint] = true
				r.Rounds.Unstable = append(r.Rounds.Unstable, f.Fingerprint)
			}
		}
		sort.Strings(r.Rounds.Unstable)
	}
	s.Exercised, s.Errored, _ = CoverageCounts(r.Coverage)
	r.Summary = s
}
