package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// The relay of `mcpsandbox run`: JSON-RPC lines between a client (the
// proxy's own stdin and stdout) and the server. The client's are passed
// on as they are, except a refused call (the policy) and the roots it
// gives (path translation); the server's as the relay read them (see
// run_wire.go: re-encoded, answers matched to the client's requests),
// tools/list results with their hints as the hint book says. Each
// tools/call is tracked so that its effects, collected by a marker once
// it is answered, are judged by the verdict's rules and logged. Nothing
// here needs an engine: the marker is the session's Mark, or a fake.

// marker collects the effects since the last mark (sandbox.Session.Mark).
type marker interface {
	Mark(ctx context.Context, call bool, seq int) report.Effects
}

// relayOptions configure one relay.
type relayOptions struct {
	Hints HintMode
	// Verdict is the policy and the rest the rules are judged under;
	// Verdict.Policy.Run says what to do about each finding.
	Verdict verdict.Config
	// Preload are findings of an earlier scan (--verdicts), acted on
	// before the first call.
	Preload []report.Finding
	// PhaseInterval is how often, between calls, the effects of the
	// server on its own are collected as a "between" phase (0: only
	// when a call begins after a gap... never on a timer).
	PhaseInterval time.Duration
	// StaleAfter ends, for its effects, a call the server has not
	// answered for this long (0: never), at the next PhaseInterval tick:
	// a call left hanging must not make every later call an overlap, with
	// no tool the only candidate for anything.
	StaleAfter time.Duration
	// Secrets names the watched secrets in data (nil: none): a result that
	// holds one is a disclosure (secret-disclosed).
	Secrets func(data string) []string
	// Watch, if set, is where the values the user types into the
	// server's elicitations are watched (Secrets then finds them too).
	Watch *watchSet
	// Drain bounds how long, once the client has closed its stdin, the
	// server's last messages are passed on (default sandbox.ExitGrace).
	Drain time.Duration
	// Roots translates the file roots the client gives (nil: none).
	Roots *rootMap
	// Log receives the records (JSON lines) and the human lines.
	Log *runLog
	// Expect and Answered tell the stdout filter which request ids a
	// response may be refused for (an error then answers it in its
	// place); nil in tests without a filter.
	Expect, Answered func(id json.RawMessage, method string)
	// MaxTools bounds the tools one listing passes to the client (0 or
	// more than maxBookTools: maxBookTools).
	MaxTools int
	// Notes are the ambiguities the session's filter met in the lines
	// before the relay reads them (nil: none is told).
	Notes *ambNotes
	// ClientQueue and ClientQueueBytes bound the messages waiting for
	// the client to read them (defaults DefaultClientQueue,
	// DefaultClientQueueBytes): past either the session ends (flood).
	ClientQueue      int
	ClientQueueBytes int64
	// Startup are the session's phases before the handshake (the
	// sandbox's startup), judged with the handshake's (see startupOnce).
	Startup []report.Phase
	// StartBound bounds how long the first answer to the client waits
	// for the startup's judgement (default sandbox's start timeout):
	// past it every hint is stripped.
	StartBound time.Duration
	// JudgeWait bounds how long a call waits for the collection and
	// judgement of the calls before it (0: DefaultJudgeWait; negative:
	// no bound): past it the call is refused, never begun while its
	// effects would be read as theirs.
	JudgeWait time.Duration
}

// DefaultJudgeWait is --judge-wait's default. With the change journal a
// collection costs what the server changed (milliseconds for a call that
// wrote a few files); only a call that changed tens of thousands of
// files, or a layer read without a journal, comes near it.
const DefaultJudgeWait = 2 * time.Second

// relay is one proxied session.
type relay struct {
	opts relayOptions
	m    marker
	book *hintBook
	log  *runLog

	clientMu  sync.Mutex
	clientQ   *clientQueue
	floodOnce sync.Once
	// end ends the session (set by run).
	end       func(error)
	serverMu  sync.Mutex
	serverOut io.Writer

	mu       sync.Mutex
	pending  *pendingSet       // the client's requests
	fromSrv  map[string]string // the server's requests, by id: their method
	seq      int
	protocol string // as the server answered initialize
	// stripLogged are the tools (and why) logged as stripped.
	stripLogged map[string]bool
	stripFull   bool
	drops       atomic.Int64
	// inheritLogged counts the tools logged as taking a record.
	inheritLogged atomic.Int64
	// asked counts the server's messages to the client by method (see
	// serverAsks), elicits the values watched from elicitations.
	asked      map[string]int
	askedOther int // messages of methods past maxAskMethods
	elicits    int

	calls *tracker
	// called are the tools called, once each (judge.go); broken counts
	// the stretches in which the server broke each hint.
	called []calledTool
	last   []calledTool // the tools of the last calls judged
	broken map[string]int
	// scratch are the workspace files the server made of its own
	// (judge.go: noteScratch).
	scratch map[string]bool
	// startup is set once the server's startup was judged, or its bound
	// passed (startupOnce).
	startup sync.Once
	// work counts the collections and phases running on their own
	// goroutines, waited for at the end.
	work sync.WaitGroup
}

// pendingReq is a request of the client's the relay waits to see answered.
type pendingReq struct {
	method string
	id     json.RawMessage // as the client sent it
	key    string          // in the pending set
	order  uint64
	call   *callInfo // tools/call only
	cursor *string   // tools/list only: the page asked for
}

// callInfo is one tools/call.
type callInfo struct {
	Seq       int
	ID        json.RawMessage
	Tool      string
	Arguments json.RawMessage
	start     time.Time
	// Set when it ends.
	DurationMs int64
	IsError    bool
	// FailsBy: the result did not set isError but says it failed
	// (report.ResultFailure), as a scan reads it.
	FailsBy   string
	Error     string
	Cancelled bool
	Disclosed []string
	// Declared is the tool as listed when the call began (nil: never
	// listed): the claim it is judged against, whatever the server
	// lists while its effects are read.
	Declared *report.Tool
}

func newRelay(m marker, opts relayOptions) *relay {
	if opts.Hints == 0 {
		opts.Hints = HintsVerified
	}
	if opts.Log == nil {
		opts.Log = &runLog{}
	}
	if opts.Drain <= 0 {
		opts.Drain = sandbox.ExitGrace
	}
	if opts.JudgeWait == 0 {
		opts.JudgeWait = DefaultJudgeWait
	}
	r := &relay{opts: opts, m: m, log: opts.Log, book: newHintBook(opts.Hints), pending: newPendingSet(), fromSrv: map[string]string{},
		stripLogged: map[string]bool{}, broken: map[string]int{}, scratch: map[string]bool{}, asked: map[string]int{}}
	if opts.MaxTools > 0 && opts.MaxTools < r.book.bound {
		r.book.bound = opts.MaxTools
	}
	r.calls = newTracker()
	return r
}

// errClientClosed and errServerClosed say which side ended the relay.
var (
	errClientClosed = errors.New("the client closed its stdin")
	errServerClosed = errors.New("the server closed its stdout")
)

// run relays until the client or the server ends its stream or ctx
// ends, then waits for the effects being collected; the calls still
// unanswered are logged as such. It returns why it ended.
func (r *relay) run(ctx context.Context, clientIn io.Reader, clientOut io.Writer, serverIn io.Reader, serverOut io.Writer) error {
	r.clientQ, r.serverOut = newClientQueue(clientOut, r.opts.ClientQueue, r.opts.ClientQueueBytes), serverOut
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.end = cancel
	r.preload()
	clientDone, serverDone := make(chan error, 1), make(chan error, 1)
	go func() { clientDone <- r.readClient(ctx, clientIn) }()
	go func() { serverDone <- r.readServer(ctx, serverIn) }()
	if r.opts.PhaseInterval > 0 {
		r.work.Add(1)
		go func() { defer r.work.Done(); r.idle(ctx) }()
	}
	var why error
	select {
	case why = <-clientDone:
		if errors.Is(why, errClientClosed) {
			// The client's way to end a stdio session: the server's stdin
			// is closed, and what it still says (answers in flight) is
			// passed on until it ends its stdout, for a moment.
			if c, ok := serverOut.(io.Closer); ok {
				r.serverMu.Lock()
				c.Close()
				r.serverMu.Unlock()
			}
			drain := time.NewTimer(r.opts.Drain)
			select {
			case <-serverDone:
			case <-drain.C:
			case <-ctx.Done():
			}
			drain.Stop()
		}
	case why = <-serverDone:
	case <-ctx.Done():
		why = context.Cause(ctx)
	}
	cancel(why)
	r.calls.close()
	r.work.Wait()
	for _, c := range r.calls.unanswered() {
		r.log.record(RunRecord{Type: "call", Seq: c.Seq, ID: c.ID, Tool: c.Tool, Error: "no answer: the session ended (" + why.Error() + ")"},
			fmt.Sprintf("call %d %s: no answer before the session ended; its effects are the teardown's", c.Seq, quoteTool(c.Tool)))
	}
	r.dropsSummary()
	r.asksSummary()
	if !r.clientQ.finish(r.opts.Drain) {
		r.log.record(RunRecord{Type: "problem", Reason: "client-unread", Message: "the client did not read the last messages within the drain: dropped"}, "client-unread: the client did not read the last messages within the drain")
	}
	return why
}

// readLines calls fn with each non-blank line of in (its newline
// included) until in ends.
func readLines(in io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			fn(line)
		}
		if err != nil {
			return err
		}
	}
}

// unbatch calls fn with each message of a JSON-RPC batch, one line each,
// or with line itself when it is no batch. A server's batch is split so
// that a tools/list answer inside one is rewritten like any other (a batch
// must not carry hints past the proxy), a client's so that each call in
// it is tracked and held to the policy. (The protocol has had no batches
// since 2025-06-18.)
func unbatch(line []byte, fn func([]byte)) {
	if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '[' {
		fn(line)
		return
	}
	msgs, err := wire.ParseArray(line)
	if err != nil || len(msgs) == 0 {
		fn(line)
		return
	}
	for _, m := range msgs {
		fn(append(append([]byte{}, m...), '\n'))
	}
}

func (r *relay) readClient(ctx context.Context, in io.Reader) error {
	err := readLines(in, func(line []byte) { unbatch(line, func(m []byte) { r.fromClient(ctx, m) }) })
	if err == nil || errors.Is(err, io.EOF) {
		return errClientClosed
	}
	return fmt.Errorf("reading the client: %w", err)
}

// readServer reads the server's lines. The session's filter gives them
// as they came (cleaned: passAsRead), so each line's ambiguities are read
// here, from the line itself.
func (r *relay) readServer(ctx context.Context, in io.Reader) error {
	err := readLines(in, func(line []byte) { r.fromServerLine(ctx, line) })
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return errServerClosed
	}
	return fmt.Errorf("reading the server: %w", err)
}

// head is what the relay reads of a message to route it (with
// wire.Unmarshal: case-sensitive, as JSON.parse and the go-sdk read).
type head struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (h head) hasID() bool { return len(h.ID) > 0 && string(h.ID) != "null" }

// method is the message's method ("" for none).
func (h head) method() string {
	if h.Method == nil {
		return ""
	}
	return *h.Method
}

// toClient queues line for the client; a server that fills the queue
// ends the session (a flood problem).
func (r *relay) toClient(line []byte) {
	r.clientMu.Lock()
	defer r.clientMu.Unlock()
	if err := r.clientQ.put(line); err != nil {
		r.floodOnce.Do(func() {
			msg := fmt.Sprintf("%s: %d messages or %d bytes wait for the client to read them; the session is ended", err, cap(r.clientQ.ch), r.clientQ.maxBytes)
			r.log.record(RunRecord{Type: "problem", Reason: "flood", Message: msg}, "flood: "+msg)
			r.end(err)
		})
	}
}

func (r *relay) toServer(line []byte) {
	r.serverMu.Lock()
	defer r.serverMu.Unlock()
	r.serverOut.Write(line)
}

func (r *relay) fromClient(ctx context.Context, line []byte) {
	var h head
	if wire.Unmarshal(line, &h) != nil {
		// Not a message: the server's to answer.
		r.toServer(line)
		return
	}
	method := h.method()
	switch {
	case method != "" && h.hasID():
		req := &pendingReq{method: method, id: append(json.RawMessage{}, bytes.TrimSpace(h.ID)...)}
		switch method {
		case "tools/list":
			var p struct {
				Cursor *string `json:"cursor"`
			}
			wire.Unmarshal(h.Params, &p)
			req.cursor = p.Cursor
		case "tools/call":
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			wire.Unmarshal(h.Params, &p)
			if d, ok := r.book.denied(p.Name); ok {
				r.refuse(h.ID, p.Name, d)
				return
			}
			r.mu.Lock()
			r.seq++
			req.call = &callInfo{Seq: r.seq, ID: append(json.RawMessage{}, h.ID...), Tool: p.Name, Arguments: p.Arguments}
			r.mu.Unlock()
			// Waits while the effects before it are read, so that none of
			// its own is taken for theirs; the judgement they get may
			// refuse it. Past the bound it is refused: begun, its effects
			// would be read as theirs.
			var d denial
			began, late := r.calls.begin(req.call, r.opts.JudgeWait, func() (ok bool) { d, ok = r.book.denied(p.Name); return !ok })
			if late {
				d = denial{Rule: JudgeWaitRule, Reason: fmt.Sprintf("the effects of the calls before it were still being read and judged after %s (--judge-wait); call again", r.opts.JudgeWait)}
				r.log.record(RunRecord{Type: "problem", Reason: JudgeWaitRule, Seq: req.call.Seq, Tool: p.Name, Message: d.Reason},
					fmt.Sprintf("judge-wait: call %d %s refused: %s", req.call.Seq, quoteTool(p.Name), d.Reason))
			}
			if !began {
				r.refuse(h.ID, p.Name, d)
				return
			}
			if t, ok := r.book.declared(p.Name); ok {
				req.call.Declared = &t
			}
		}
		if len(h.Params) > 0 && bytes.Contains(h.Params, []byte(`"inputResponses"`)) {
			r.inputResponses(h.Params)
		}
		if r.opts.Roots != nil && len(h.Params) > 0 && bytes.Contains(h.Params, []byte(`"inputResponses"`)) {
			if p, changed := r.opts.Roots.translateInputs(h.Params); changed {
				if out, err := wire.ReplaceMember(line, "params", p); err == nil {
					line = out
				}
			}
		}
		r.mu.Lock()
		evicted := r.pending.add(req)
		r.mu.Unlock()
		if evicted != nil {
			if r.opts.Answered != nil {
				r.opts.Answered(evicted.id, evicted.method)
			}
			r.log.record(RunRecord{Type: "problem", Reason: "pending", ID: evicted.id, Message: fmt.Sprintf("more than %d requests of the client's unanswered: the oldest (%s) is forgotten, and its answer will be dropped", maxPending, evicted.method)},
				fmt.Sprintf("more than %d requests unanswered: request %s (%s) is forgotten", maxPending, report.OneLine(string(evicted.id)), evicted.method))
		}
		if r.opts.Expect != nil {
			r.opts.Expect(h.ID, method)
		}
	case method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		wire.Unmarshal(h.Params, &p)
		r.mu.Lock()
		req := r.pending.get(pendingKey(p.RequestID))
		r.mu.Unlock()
		if req != nil && req.call != nil {
			// The server may never answer: the call ends here, for its
			// effects.
			r.endCall(ctx, req.call, nil, true)()
		}
	case h.Method == nil && h.hasID():
		// The client answers a request of the server's.
		key := pendingKey(h.ID)
		r.mu.Lock()
		method := r.fromSrv[key]
		delete(r.fromSrv, key)
		r.mu.Unlock()
		if len(h.Result) > 0 && method != "roots/list" {
			// By its shape, whatever fromSrv remembers (it is bounded).
			r.elicited(h.Result)
		}
		if method == "roots/list" && r.opts.Roots != nil && len(h.Result) > 0 {
			if res, changed := r.opts.Roots.translate(h.Result); changed {
				if out, err := replaceResult(line, res); err == nil {
					line = out
				}
			}
		}
	}
	r.toServer(line)
}

// fromServerLine reads one line of the server's and passes on each
// message in it as read.
func (r *relay) fromServerLine(ctx context.Context, line []byte) {
	line = bytes.TrimSpace(line)
	rd, err := wire.Read(line)
	if err != nil {
		r.drop(nil, "a line no strict JSON reader takes whole: "+report.OneLine(err.Error()))
		return
	}
	amb := readingAmb(rd)
	// The id as sent, for the exact match: the reading rounds an integer
	// past 2^53 as JavaScript reads it, which two of the client's ids may
	// share.
	var raw struct {
		ID json.RawMessage `json:"id"`
	}
	if line[0] == '{' {
		wire.Unmarshal(line, &raw)
	}
	unbatch(append(rd.Canonical, '\n'), func(m []byte) { r.fromServer(ctx, m, amb, raw.ID) })
}

// fromServer passes on one message of the server's (canonical, its line
// ambiguous where amb says; rawID its id as sent, if known): a request or
// a notification as it is, an answer only to the request of the client's
// it answers, with the id the client sent.
func (r *relay) fromServer(ctx context.Context, line []byte, amb lineAmb, rawID json.RawMessage) {
	var h head
	if wire.Unmarshal(line, &h) != nil {
		r.drop(nil, "not a JSON-RPC message (not an object, or a member of the wrong type)")
		return
	}
	switch method := h.method(); {
	case h.Method != nil && method == "":
		// A request to one reader (the TypeScript SDK), an answer to
		// another (the go-sdk): neither, here.
		r.drop(h.ID, "a message whose method is empty")
		return
	case method != "" && h.hasID():
		if r.serverAsks(line, h, method) {
			return
		}
		r.mu.Lock()
		if len(r.fromSrv) < maxServerRequests {
			r.fromSrv[pendingKey(h.ID)] = method
		}
		r.mu.Unlock()
		r.toClient(line)
		return
	case method != "":
		if out, pass := r.serverTells(line, h, method); pass {
			r.toClient(out)
		}
		return
	case !h.hasID():
		if len(h.Result) == 0 && len(h.Error) == 0 {
			r.drop(nil, "neither a request, a notification nor an answer")
		} else {
			r.drop(nil, "an answer without an id, which answers no request")
		}
		return
	}
	r.mu.Lock()
	req, loose := r.pending.take(rawID, h.ID)
	r.mu.Unlock()
	if req == nil {
		r.drop(h.ID, fmt.Sprintf("an answer to no request of the client's (id %.64s)", h.ID))
		return
	}
	if r.opts.Answered != nil {
		r.opts.Answered(req.id, req.method)
	}
	if !bytes.Equal(h.ID, req.id) {
		out, err := wire.ReplaceMember(line, "id", req.id)
		if err != nil {
			r.drop(h.ID, "an answer whose id cannot be given back as the client sent it")
			return
		}
		line = out
		if loose {
			// The id's form is an ambiguity of the line's.
			amb.whole = true
			r.log.record(RunRecord{Type: "rewrite", ID: req.id, Message: fmt.Sprintf("the answer to request %s (%s) came with the id %.64s: given to the client with its own id", req.id, req.method, h.ID)},
				fmt.Sprintf("the answer to request %s (%s) came with the id %.64s: passed on with the client's own", report.OneLine(string(req.id)), req.method, h.ID))
		}
	}
	switch req.method {
	case "initialize", "server/discover":
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		wire.Unmarshal(h.Result, &res)
		r.mu.Lock()
		r.protocol = res.ProtocolVersion
		r.mu.Unlock()
		if v := res.ProtocolVersion; v != "" && !report.ToolAnnotationsIn(v) {
			// The rules judge no hint of such a version; clients read
			// them all the same.
			why := fmt.Sprintf("the server speaks protocol version %s, which has no tool annotations: its hints are not judged", report.OneLine(v))
			if r.book.stripEvery(why) {
				r.log.record(RunRecord{Type: "problem", Reason: "protocol", Message: why + ", so every tool's are stripped"}, "protocol: "+why+", so every tool's are stripped")
			}
		}
		r.startupOnce(ctx)
		r.toClient(line)
		return
	case "tools/list":
		// A client of the stateless protocol may list before any
		// handshake: its first answer ends the startup all the same.
		r.startupOnce(ctx)
		if len(h.Result) > 0 {
			line = r.listed(line, h.Result, req, amb)
		}
	case "tools/call":
		// A stateless client may call before any handshake or listing:
		// the startup is judged all the same (its handshake's effects
		// are then the call's).
		r.startupOnce(ctx)
		if len(h.Result) > 0 && bytes.Contains(h.Result, []byte(`"inputRequests"`)) {
			line = r.inputRequests(line, h)
		}
		// The call ends before the client has the answer, so that a
		// call it makes on reading it is not taken for an overlap; the
		// answer goes before the effects are read.
		collect := r.endCall(ctx, req.call, &h, false)
		r.toClient(line)
		collect()
		return
	}
	r.toClient(line)
}

// listed is a tools/list answer as the client is to see it: the hints as
// the book says, stripped where the line or the tool was ambiguous, and
// the list cut at the bound.
func (r *relay) listed(line []byte, result json.RawMessage, req *pendingReq, amb lineAmb) []byte {
	pg := page{Cursor: req.cursor, Whole: amb.whole, Ambiguous: func(i int, name string) bool {
		return amb.tools[i] || r.opts.Notes.tainted(name)
	}}
	lp := r.book.listed(result, pg)
	r.logStripped(lp.Stripped)
	for _, in := range lp.Inherited {
		if r.inheritLogged.Add(1) > maxStripsLogged {
			if r.inheritLogged.Load() == maxStripsLogged+1 {
				r.log.record(RunRecord{Type: "hint", Reason: "further tools taking a record are not logged one by one"}, "")
			}
			continue
		}
		if in.From == "" {
			r.log.record(RunRecord{Type: "hint", Tool: in.Tool, Reason: in.Why + ": listed on the safe side"},
				fmt.Sprintf("%s: %s, listed on the safe side", quoteTool(in.Tool), in.Why))
			continue
		}
		r.log.record(RunRecord{Type: "hint", Tool: in.Tool, Reason: fmt.Sprintf("takes the record of %q (%s): its corrections and refusal hold for it", in.From, in.Why)},
			fmt.Sprintf("%s takes the record of %s (%s)", quoteTool(in.Tool), quoteTool(in.From), in.Why))
	}
	if r.opts.Hints == HintsVerified {
		// A client of the stateless protocol keeps a list for its ttlMs:
		// a correction must reach it at the next listing, not after.
		if res, did := noCache(lp.Result); did {
			lp.Result, lp.Changed = res, true
		}
	}
	if lp.Cut > 0 {
		msg := fmt.Sprintf("the tool list was cut at %d tools (the tool bound, --max-tools): %d tool(s) past it on this page were not passed to the client, nor any later page", r.book.bound, lp.Cut)
		r.log.record(RunRecord{Type: "problem", Reason: "tool-list-truncated", Message: msg}, "tool-list-truncated: "+msg)
	}
	if !lp.Changed {
		return line
	}
	out, err := replaceResult(line, lp.Result)
	if err != nil {
		return line
	}
	return out
}

// noCache is a tools/list result with its ttlMs (protocol 2026-07-28
// on) set to 0, when it has one.
func noCache(result json.RawMessage) (json.RawMessage, bool) {
	res, err := wire.ParseObject(result)
	if err != nil {
		return result, false
	}
	if v, ok := res.Get("ttlMs"); !ok || string(bytes.TrimSpace(v)) == "0" {
		return result, false
	}
	return res.Set("ttlMs", json.RawMessage("0")).Encode(), true
}

// maxServerRequests bounds the server's requests remembered for their
// answers (only roots/list's is rewritten): a server that asks without
// end grows nothing.
const maxServerRequests = 1024

// endCall ends c with the server's answer h (nil: cancelled) and returns
// what starts the collection of its effects, when it was the last call
// in flight (a no-op otherwise).
func (r *relay) endCall(ctx context.Context, c *callInfo, h *head, cancelled bool) func() {
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent any `json:"structuredContent"`
	}
	var rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	errText := ""
	var disclosed []string
	if h != nil {
		wire.Unmarshal(h.Result, &res)
		if r.opts.Secrets != nil {
			disclosed = report.Roles(r.opts.Secrets(string(h.Result)))
		}
		if len(h.Error) > 0 && wire.Unmarshal(h.Error, &rpcErr) == nil {
			errText = fmt.Sprintf("JSON-RPC error %d: %s", rpcErr.Code, report.OneLine(rpcErr.Message))
		}
	}
	if cancelled {
		errText = "cancelled by the client"
	}
	failsBy := ""
	if h != nil && !res.IsError && errText == "" {
		failsBy = report.ResultFailure(resultTexts(res.Content), res.StructuredContent)
	}
	if g := r.calls.end(c, func(c *callInfo) {
		c.DurationMs, c.IsError, c.Error, c.Cancelled, c.Disclosed = time.Since(c.start).Milliseconds(), res.IsError, errText, cancelled, disclosed
		c.FailsBy = failsBy
	}); g != nil {
		// Not on the reader's goroutine: the server's next messages do
		// not wait for the snapshot.
		r.work.Add(1)
		return func() { go func() { defer r.work.Done(); r.calls.collect(ctx, r, g) }() }
	}
	return func() {}
}

// refuse answers a call the policy denies, in the server's place.
func (r *relay) refuse(id json.RawMessage, tool string, d denial) {
	msg := fmt.Sprintf("mcpsandbox: the call to tool %q is refused by policy: rule %s (%s)", tool, d.Rule, d.Reason)
	body, _ := json.Marshal(map[string]any{"code": RunDeniedCode, "message": msg, "data": map[string]string{"rule": d.Rule, "tool": tool}})
	r.toClient(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", id, body))
	r.log.record(RunRecord{Type: "deny", ID: id, Tool: tool, Rule: d.Rule, Reason: d.Reason},
		fmt.Sprintf("refused a call to %s: rule %s (%s)", quoteTool(tool), d.Rule, d.Reason))
}

// JudgeWaitRule names a refusal past --judge-wait (in the error's data
// and the log): no rule of the verdict's, a bound of run's.
const JudgeWaitRule = "judge-wait"

// RunDeniedCode is the JSON-RPC error code of a call run refuses by
// policy (the message and data name the rule).
const RunDeniedCode = -32010

// replaceResult is the message line with its result replaced, the rest
// as sent.
func replaceResult(line []byte, result json.RawMessage) ([]byte, error) {
	return wire.ReplaceMember(line, "result", result)
}

// action is what the policy says for rule on tool; unset, --hints
// verified corrects and the other modes log.
func (r *relay) action(rule, tool string) rules.Action {
	if a, ok := r.opts.Verdict.Policy.Run.Action(rule, tool); ok {
		return a
	}
	if r.opts.Hints == HintsVerified {
		return rules.ActionCorrect
	}
	return rules.ActionLog
}

// preload acts on an earlier scan's findings (--verdicts).
func (r *relay) preload() {
	for _, f := range r.opts.Preload {
		if f.Tool == "" {
			continue
		}
		if _, ok := hintFixes[f.Rule]; !ok && r.action(f.Rule, f.Tool) != rules.ActionDeny {
			continue
		}
		r.act(f, "an earlier scan (--verdicts): "+report.OneLine(f.Message), 0, r.log.record)
	}
}

// listChanged tells the client the tool list changed, so that it lists
// the corrected hints.
func (r *relay) listChanged() {
	r.toClient([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"))
	r.log.record(RunRecord{Type: "notify", Message: "notifications/tools/list_changed sent to the client"}, "")
}

// idle collects, every PhaseInterval while no call runs, what the server
// does on its own, as "between" phases.
func (r *relay) idle(ctx context.Context) {
	t := time.NewTicker(r.opts.PhaseInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.expire(ctx)
			if _, changed := r.calls.phase(ctx, r, "between"); changed {
				r.listChanged()
			}
		}
	}
}

// expire ends the calls in flight for longer than StaleAfter.
func (r *relay) expire(ctx context.Context) {
	if r.opts.StaleAfter <= 0 {
		return
	}
	for _, c := range r.calls.older(time.Now().Add(-r.opts.StaleAfter)) {
		msg := fmt.Sprintf("no answer within %s: ended here for its effects (an answer later is still passed on)", r.opts.StaleAfter)
		if g := r.calls.end(c, func(c *callInfo) { c.DurationMs, c.Error = time.Since(c.start).Milliseconds(), msg }); g != nil {
			r.work.Add(1)
			go func() { defer r.work.Done(); r.calls.collect(ctx, r, g) }()
		}
	}
}

// logCall logs a call (or a group of overlapping calls) and its effects.
func (r *relay) logCall(group []*callInfo, eff report.Effects) {
	var overlap []int
	if len(group) > 1 {
		for _, c := range group {
			overlap = append(overlap, c.Seq)
		}
	}
	for i, c := range group {
		d := c.DurationMs
		rec := RunRecord{Type: "call", Seq: c.Seq, ID: c.ID, Tool: c.Tool, DurationMs: &d, IsError: c.IsError, FailsBy: c.FailsBy, Error: c.Error, Overlap: overlap}
		if i == 0 {
			e := eff
			rec.Effects = &e
		} else {
			rec.EffectsOf = group[0].Seq
		}
		human := fmt.Sprintf("call %d %s (%d ms): %s", c.Seq, quoteTool(c.Tool), d, summarize(eff))
		if len(overlap) > 1 {
			human += fmt.Sprintf(" (together with calls %v)", overlap)
		}
		if i > 0 {
			human = ""
		}
		r.log.record(rec, human)
	}
}

// logPhase logs what happened outside calls, when anything did.
func (r *relay) logPhase(name string, after int, eff report.Effects) {
	if eff.Empty() && name == "between" {
		return
	}
	e := eff
	r.log.record(RunRecord{Type: "phase", Phase: name, After: after, Effects: &e}, fmt.Sprintf("%s: %s", name, summarize(eff)))
}

// summarize is effects in a few words, for a human line.
func summarize(e report.Effects) string {
	if e.Empty() {
		return "no effects"
	}
	var parts []string
	if n := len(e.Files) + e.FilesOmitted; n > 0 {
		var names []string
		for _, f := range e.Files[:min(len(e.Files), 3)] {
			names = append(names, f.Change.String()+" "+f.Path)
		}
		if n > len(names) {
			names = append(names, fmt.Sprintf("%d more", n-len(names)))
		}
		parts = append(parts, fmt.Sprintf("%d file(s): %s", n, strings.Join(names, ", ")))
	}
	if n := len(e.Processes); n > 0 {
		parts = append(parts, fmt.Sprintf("%d process(es)", n))
	}
	if n := len(e.Network); n > 0 {
		parts = append(parts, fmt.Sprintf("%d network attempt(s)", n))
	}
	if e.FilesTruncated {
		parts = append(parts, "file walk cut at its bound")
	}
	return strings.Join(parts, "; ")
}

func quoteTool(name string) string { return fmt.Sprintf("%q", report.OneLine(name)) }

func fmtHint(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// tracker groups the calls that overlap and serializes the effects'
// collection: a call begins only when no collection runs, so that none of
// its effects is read as another's.
type tracker struct {
	mu         sync.Mutex
	cond       *sync.Cond
	inflight   map[int]*callInfo
	group      []*callInfo
	collecting bool
	closed     bool
	after      int // the last call whose effects were collected
}

func newTracker() *tracker {
	t := &tracker{inflight: map[int]*callInfo{}}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// begin waits until no collection runs, at most wait (negative: no
// bound), then begins c if allowed says so (no judgement runs meanwhile:
// each holds collecting); began false: not begun, late: the wait ran out.
func (t *tracker) begin(c *callInfo, wait time.Duration, allowed func() bool) (began, late bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.collecting && wait >= 0 {
		// A sync.Cond has no timeout: a timer wakes the wait.
		deadline := time.Now().Add(wait)
		tm := time.AfterFunc(wait, func() {
			t.mu.Lock()
			t.cond.Broadcast()
			t.mu.Unlock()
		})
		defer tm.Stop()
		for t.collecting && !t.closed && time.Now().Before(deadline) {
			t.cond.Wait()
		}
		if t.collecting && !t.closed {
			return false, true
		}
	}
	for t.collecting && !t.closed {
		t.cond.Wait()
	}
	if !allowed() {
		return false, false
	}
	c.start = time.Now()
	t.inflight[c.Seq] = c
	t.group = append(t.group, c)
	return true, false
}

// end ends c (fill sets what it ended with) and returns the group to
// collect when it was the last in flight (nil otherwise); collecting is
// then set, for collect to clear.
func (t *tracker) end(c *callInfo, fill func(*callInfo)) []*callInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.inflight[c.Seq]; !ok {
		return nil // ended already (cancelled, then answered)
	}
	fill(c)
	delete(t.inflight, c.Seq)
	if len(t.inflight) > 0 || t.closed {
		return nil
	}
	g := t.group
	t.group = nil
	t.collecting = true
	return g
}

// collect reads the group's effects, judges them and logs them (the call
// first, then what the rules found and what was done about it); the next
// call begins after, so that a correction or a denial holds for it.
func (t *tracker) collect(ctx context.Context, r *relay, g []*callInfo) {
	eff := r.m.Mark(ctx, true, g[0].Seq)
	type held struct {
		rec   RunRecord
		human string
	}
	var found []held
	notify := r.judge(g, eff, func(rec RunRecord, human string) { found = append(found, held{rec, human}) })
	r.noteCalled(g)
	r.noteScratch(eff, g)
	r.logCall(g, eff)
	for _, h := range found {
		r.log.record(h.rec, h.human)
	}
	if notify {
		r.listChanged()
	}
	t.mu.Lock()
	t.collecting = false
	t.after = g[len(g)-1].Seq
	t.cond.Broadcast()
	t.mu.Unlock()
}

// phase collects a phase when no call runs and no collection does, and
// judges it (before: phases judged with it, the startup's); it says
// whether it ran, and whether the client must be told the list changed.
func (t *tracker) phase(ctx context.Context, r *relay, name string, before ...report.Phase) (ran, changed bool) {
	t.mu.Lock()
	if t.collecting || len(t.inflight) > 0 || t.closed {
		t.mu.Unlock()
		return false, false
	}
	t.collecting = true
	after := t.after
	t.mu.Unlock()
	eff := r.m.Mark(ctx, false, after)
	r.logPhase(name, after, eff)
	changed = r.judgePhase(slices.Concat(before, []report.Phase{{Name: name, After: after, Effects: eff}}), r.log.record)
	t.mu.Lock()
	t.collecting = false
	t.cond.Broadcast()
	t.mu.Unlock()
	return true, changed
}

// close stops new collections and waits for the one running.
func (t *tracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.cond.Broadcast()
	for t.collecting {
		t.cond.Wait()
	}
}

// older are the calls in flight that began before t.
func (t *tracker) older(before time.Time) []*callInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*callInfo
	for _, c := range t.group {
		if _, ok := t.inflight[c.Seq]; ok && c.start.Before(before) {
			out = append(out, c)
		}
	}
	return out
}

// unanswered are the calls still in flight, in order.
func (t *tracker) unanswered() []*callInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*callInfo
	for _, c := range t.group {
		if _, ok := t.inflight[c.Seq]; ok {
			out = append(out, c)
		}
	}
	return out
}

// maxClassifiedText bounds the text a result's failure is read from, as
// a scan's --max-result-text default keeps it.
const maxClassifiedText = 4 << 10

// resultTexts joins a result's text items, as a scan's report keeps
// them, bounded.
func resultTexts(content []struct {
	Type string `json:"type"`
	Text string `json:"text"`
}) string {
	var b strings.Builder
	for _, c := range content {
		if c.Type != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
		if b.Len() > maxClassifiedText {
			return b.String()[:maxClassifiedText]
		}
	}
	return b.String()
}
