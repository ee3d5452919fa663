package sandbox

// Bounds limit what the runner reads and keeps of what the server sends,
// so that no server can exhaust the runner's memory or bloat its report:
// a bound that is hit is a problem in the report (a protocol-bound
// problem), never an out-of-memory kill. Zero fields take the defaults.
type Bounds struct {
	// MaxMessage bounds one JSON-RPC message (one line of stdout) from the
	// server. A larger one is read through without being kept (counted
	// and, for a result, hashed) and refused: the request it answers gets
	// an error in its place and the session goes on.
	MaxMessage int
	// MaxDepth bounds the nesting of objects and arrays in one message;
	// a deeper one is refused the same way. It is kept below the MCP SDK's
	// own limit (1,000), past which the SDK closes the session.
	MaxDepth int
	// MaxToolPages bounds the pages of tools/list, MaxToolListBytes the
	// bytes of all their results, MaxTools the tools kept; past any of
	// them the list is cut (the tools past it are neither called nor
	// judged).
	MaxToolPages, MaxToolListBytes, MaxTools int
	// MaxSchema bounds one tool's inputSchema, outputSchema and
	// description each; a larger one is replaced (the tool is then
	// listed, not called).
	MaxSchema int
	// MaxResultText bounds the text kept of each call's result (the whole
	// result is counted and hashed: resultBytes, resultSha256).
	MaxResultText int
	// MaxTranscript bounds the frames kept in the transcript (the rest are
	// counted).
	MaxTranscript int
}

// The defaults, one constant per bound.
const (
	DefaultMaxMessage       = 4 << 20
	DefaultMaxDepth         = 256
	DefaultMaxToolPages     = 1000
	DefaultMaxToolListBytes = 16 << 20
	DefaultMaxTools         = 2000
	DefaultMaxSchema        = 256 << 10
	DefaultMaxResultText    = 4 << 10
	DefaultMaxTranscript    = 32 << 20
)

// DefaultBounds are the bounds a scan runs with unless told otherwise.
func DefaultBounds() Bounds {
	return Bounds{MaxMessage: DefaultMaxMessage, MaxDepth: DefaultMaxDepth, MaxToolPages: DefaultMaxToolPages,
		MaxToolListBytes: DefaultMaxToolListBytes, MaxTools: DefaultMaxTools, MaxSchema: DefaultMaxSchema,
		MaxResultText: DefaultMaxResultText, MaxTranscript: DefaultMaxTranscript}
}

// WithDefaults is b with its zero fields filled in.
func (b Bounds) WithDefaults() Bounds {
	d := DefaultBounds()
	for _, f := range []struct {
		v   *int
		def int
	}{{&b.MaxMessage, d.MaxMessage}, {&b.MaxDepth, d.MaxDepth},
		{&b.MaxToolPages, d.MaxToolPages}, {&b.MaxToolListBytes, d.MaxToolListBytes}, {&b.MaxTools, d.MaxTools},
		{&b.MaxSchema, d.MaxSchema}, {&b.MaxResultText, d.MaxResultText}, {&b.MaxTranscript, d.MaxTranscript}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	// Past the SDK's own depth limit the SDK, not the bound, would act.
	b.MaxDepth = min(b.MaxDepth, sdkMaxDepth-1)
	return b
}

// sdkMaxDepth is the nesting at which the MCP SDK refuses a message and
// closes the session (go-sdk internal/json defaultMaxDepth).
const sdkMaxDepth = 1000
