package twin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/sandbox/scriptmodel"
)

// The hidden argv[1] values that make the agent's binary the twin host or
// its stdio relay (see cmd/mcpsandbox/main.go).
// ProbeArg is the self-test's HTTP client: a process of its own, since
// the host, which no one may read, cannot have its connect judged by the
// agent (which reads the address from its memory).
const (
	HostArg  = "mcpsandbox-twin"
	StdioArg = "mcpsandbox-twin-stdio"
	ProbeArg = "mcpsandbox-twin-probe"
)

// Is says whether arg (argv[1] of /sbin/docker-init) starts a twin mode.
func Is(arg string) bool { return arg == HostArg || arg == StdioArg || arg == ProbeArg }

// Where the twin listens on the container's loopback, and the abstract
// unix socket the stdio relay reaches it through (the container has its
// own network namespace: nothing else uses them).
const (
	Loopback   = "127.0.0.1"
	MCPPort    = 41171
	ModelPort  = 41172
	MCPPath    = "/mcp"
	SocketName = "@mcpsandbox-twin"
)

// MCPURL and ModelURL are the twin's addresses as a client is given them.
func MCPURL() string   { return "http://" + Loopback + ":" + strconv.Itoa(MCPPort) + MCPPath }
func ModelURL() string { return "http://" + Loopback + ":" + strconv.Itoa(ModelPort) }

// The tools: one stem each; the names a client gives them may add a
// prefix (mcp__twin__alpha).
const (
	Alpha = "alpha"
	Beta  = "beta"
)

// ServerName is the name the adapters give the twin in a client's
// configuration, and the twin's serverInfo name.
const ServerName = "twin"

// MarkerDir is where the tools write their marker files.
const MarkerDir = "/tmp/mcpsandbox-twin"

// MarkerPath is the marker file of the call with ledger number seq.
func MarkerPath(seq int) string { return path.Join(MarkerDir, fmt.Sprintf("marker-%06d", seq)) }

// MarkerContent is what the call with ledger number seq writes: the run's
// nonce (which no one in the container knows before a call) and the tool.
func MarkerContent(nonce, tool string, seq int) []byte {
	return fmt.Appendf(nil, "mcpsandbox twin marker\nnonce: %s\ntool: %s\ncall: %d\n", nonce, tool, seq)
}

// MarkerSHA256 is the hex SHA-256 of MarkerContent, as file effects give it.
func MarkerSHA256(nonce, tool string, seq int) string {
	h := sha256.Sum256(MarkerContent(nonce, tool, seq))
	return hex.EncodeToString(h[:])
}

// Phase is which stretch of a run a request came in.
type Phase string

const (
	PhaseSelfTest Phase = "selftest" // the harness's own calls
	PhaseClient   Phase = "client"   // the client's
)

// Conn is how a request reached the twin.
type Conn string

const (
	ConnHTTP  Conn = "http"
	ConnStdio Conn = "stdio"
)

// Entry is one request in the ledger.
type Entry struct {
	Seq     int    `json:"seq"`
	Phase   Phase  `json:"phase"`
	Conn    Conn   `json:"conn"`
	Session int    `json:"session"` // the connection's number, per Conn; 0 on a message not read
	Method  string `json:"method"`
	// Tool and Marker are set on a tools/call: the tool asked for and the
	// marker file the call wrote ("" when the tool is not one of the twin's).
	Tool   string `json:"tool,omitempty"`
	Marker string `json:"marker,omitempty"`
	// Listing is a tools/list reply's tools, as sent.
	Listing json.RawMessage `json:"listing,omitempty"`
	// Error is set when the request failed, and on a message the twin
	// did not read (Method "": see LedgerOut.Unread), why.
	Error string `json:"error,omitempty"`
}

// Faults break the twin on purpose, for the harness's own tests: the
// runner sets them on its private channel; no client can.
type Faults struct {
	// Drift makes every tools/list reply after a session's first mark
	// beta read-only too: the listing changes between calls.
	Drift bool `json:"drift,omitempty"`
	// DropCalls keeps tools/call out of the ledger: a witness that cannot
	// see.
	DropCalls bool `json:"dropCalls,omitempty"`
}

// The runner's control tools, served only on the host's stdio.
const (
	ToolSelfTest = "twin_selftest"
	ToolPrepare  = "twin_prepare"
	ToolRun      = "twin_run"
	ToolLedger   = "twin_ledger"
)

// SelfTestIn starts the self-test: the host calls alpha as a client over
// HTTP and through the stdio relay, under Nonce.
type SelfTestIn struct {
	Nonce  string `json:"nonce"`
	Faults Faults `json:"faults"`
}

// SelfTestOut is what the self-test did; its errors are the harness's.
type SelfTestOut struct {
	Conns  []Conn   `json:"conns"`
	Errors []string `json:"errors,omitempty"`
}

// File is a file an adapter writes before the client starts. Path is
// absolute (the runner resolves ~ and relative paths).
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    uint32 `json:"mode,omitempty"` // default 0644
}

// PrepareIn switches to the client phase: the nonce, the tool the model
// asks for, the client's fresh HOME and the adapter's files.
type PrepareIn struct {
	Nonce string `json:"nonce"`
	Tool  string `json:"tool"`
	Home  string `json:"home"`
	Files []File `json:"files"`
}

// PrepareOut says whether HOME was made fresh and what was written.
type PrepareOut struct {
	// Fresh is set when HOME did not exist and was made empty.
	Fresh   bool     `json:"fresh"`
	Written []string `json:"written"`
	Errors  []string `json:"errors,omitempty"`
}

// RunIn starts the client: stdin at end of file, HOME as prepared.
type RunIn struct {
	Argv      []string `json:"argv"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir"`
	TimeoutMs int64    `json:"timeoutMs"`
}

// RunOut is how the client ended and the tails of its output.
type RunOut struct {
	Started  bool   `json:"started"`
	ExitCode int    `json:"exitCode"`
	TimedOut bool   `json:"timedOut,omitempty"`
	Error    string `json:"error,omitempty"`
	Stdout   Tail   `json:"stdout"`
	Stderr   Tail   `json:"stderr"`
}

// Tail is the end of an output stream, bounded (TailLimit).
type Tail struct {
	Text      string `json:"text"`
	Bytes     int64  `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

// TailLimit bounds the bytes kept of the client's stdout and stderr each.
const TailLimit = 16 << 10

// LedgerOut is the ledger and the model's turns, bounded (MaxEntries,
// scriptmodel's MaxTurns): what is past a bound is counted.
type LedgerOut struct {
	Entries      []Entry            `json:"entries"`
	Dropped      int                `json:"dropped,omitempty"`
	Turns        []scriptmodel.Turn `json:"turns"`
	TurnsDropped int                `json:"turnsDropped,omitempty"`
	// TurnsRefused counts the model requests refused for their size.
	TurnsRefused int `json:"turnsRefused,omitempty"`
	// Ambiguities are the places where two mainstream JSON readers part
	// on a message the twin received (a client's, or the self-test's),
	// the first MaxAmbiguities; AmbiguitiesOmitted counts the rest, per
	// phase. The method and tool are the twin's reading, which is the
	// one it acted on.
	Ambiguities        []Ambiguity   `json:"ambiguities,omitempty"`
	AmbiguitiesOmitted map[Phase]int `json:"ambiguitiesOmitted,omitempty"`
	// Unread counts, per phase, the messages the twin did not read (no
	// reading every strict reader takes, or over the SDK's bound); each
	// is also an entry, with its Error.
	Unread map[Phase]int `json:"unread,omitempty"`
}

// MaxEntries bounds the ledger; maxListing a listing kept in an entry.
const (
	MaxEntries = 500
	maxListing = 16 << 10
)
