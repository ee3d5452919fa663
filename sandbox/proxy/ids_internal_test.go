package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// rawRelay is a relay between two pipes the test speaks on directly: the
// client's lines in, the server's lines in, and what each side is given.
type rawRelay struct {
	rl       *relay
	c2r, s2r io.WriteCloser
	toClient chan string
	toServer chan string
	records  chan RunRecord
}

func newRawRelay(t *testing.T, opts relayOptions) *rawRelay {
	t.Helper()
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	r2sR, r2sW := io.Pipe()
	s2rR, s2rW := io.Pipe()
	h := &rawRelay{c2r: c2rW, s2r: s2rW, toClient: make(chan string, 64), toServer: make(chan string, 64), records: make(chan RunRecord, 1024)}
	opts.Log = &runLog{hook: func(r RunRecord) {
		select {
		case h.records <- r:
		default:
		}
	}}
	h.rl = newRelay(&fakeMarker{}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.rl.run(ctx, c2rR, r2cW, s2rR, r2sW); r2cW.Close(); r2sW.Close(); close(done) }()
	lines := func(r io.Reader, ch chan string) {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(ch)
				return
			}
			ch <- l
		}
	}
	go lines(r2cR, h.toClient)
	go lines(r2sR, h.toServer)
	t.Cleanup(func() { cancel(); c2rW.Close(); s2rW.Close(); <-done })
	return h
}

// client sends a line of the client's and waits for the server to get it.
func (h *rawRelay) client(t *testing.T, line string) {
	t.Helper()
	go io.WriteString(h.c2r, line+"\n")
	select {
	case <-h.toServer:
	case <-time.After(5 * time.Second):
		t.Fatalf("the server never got %s", line)
	}
}

// server sends a line of the server's.
func (h *rawRelay) server(line string) { go io.WriteString(h.s2r, line+"\n") }

// got is the next line the client is given.
func (h *rawRelay) got(t *testing.T) string {
	t.Helper()
	select {
	case l := <-h.toClient:
		return strings.TrimSuffix(l, "\n")
	case <-time.After(5 * time.Second):
		t.Fatal("the client was given nothing")
		return ""
	}
}

// nothing checks that the client is given nothing (a ping answered after
// the line sent shows the line was read through: the relay reads in
// order).
func (h *rawRelay) nothing(t *testing.T, ping int) {
	t.Helper()
	id := fmt.Sprint(ping)
	h.client(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	h.server(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
	if got := h.got(t); got != `{"jsonrpc":"2.0","id":`+id+`,"result":{}}` {
		t.Errorf("the client was given %s", got)
	}
}

func (h *rawRelay) record(t *testing.T, typ string) RunRecord {
	t.Helper()
	for {
		select {
		case r := <-h.records:
			if r.Type == typ {
				return r
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s record", typ)
			return RunRecord{}
		}
	}
}

// listedTool is a tool as a JSON.parse reader (the TypeScript SDK) reads
// it: exact keys, the last of duplicates.
type listedTool struct {
	Name        string                     `json:"name"`
	Annotations map[string]json.RawMessage `json:"annotations"`
}

func toolsOf(t *testing.T, line string) []listedTool {
	t.Helper()
	var m struct {
		Result struct {
			Tools []listedTool `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return m.Result.Tools
}

func hintsOf(tools []listedTool, name string) (map[string]json.RawMessage, int) {
	var ann map[string]json.RawMessage
	n := 0
	for _, tl := range tools {
		if tl.Name == name {
			ann, n = tl.Annotations, n+1
		}
	}
	return ann, n
}

// TestRelayForwardsWhatItRead: the server's lines reach the client as
// wire.Read re-encodes them (duplicates, case variants, __proto__ gone);
// a line no strict reader takes, and what is no request, notification or
// answer, are dropped and logged.
func TestRelayForwardsWhatItRead(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	h.client(t, `{"jsonrpc":"2.0","id":1,"method":"x/y"}`)
	h.server(`{"jsonrpc":"2.0", "id":1, "result":{"a":1,"a":2,"__proto__":{"b":1},"x":"\ud800"}, "RESULT":{"a":3}}`)
	if got, want := h.got(t), `{"jsonrpc":"2.0","id":1,"result":{"a":2,"x":"`+"\ufffd"+`"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	h.server(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x","level":"error"}}`)
	if got, want := h.got(t), `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x","level":"error"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for i, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"n":NaN}}`,
		`{"jsonrpc":"2.0","method":"notifications/message"} {"jsonrpc":"2.0","id":3,"result":{}}`,
		"\xef\xbb\xbf" + `{"jsonrpc":"2.0","method":"notifications/message"}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":5,"method":"","result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","method":7}`,
		`"a string"`,
		`{"jsonrpc":"2.0","error":{"code":1,"message":"no id"}}`,
	} {
		h.server(line)
		if r := h.record(t, "drop"); r.Reason == "" {
			t.Errorf("line %d: drop record %+v", i, r)
		}
		h.nothing(t, 100+i)
	}
}

// TestRelayMatchesAnswersToRequests: an answer reaches the client only as
// the answer to a request of the client's, matched exactly or as the
// TypeScript SDK matches (Number(id)), and always with the id as the
// client sent it; an answer to none (a server's own request's id, an id
// given twice, null, a form two requests share) is dropped.
func TestRelayMatchesAnswersToRequests(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	for _, tc := range []struct{ sent, answered string }{
		{`1`, `1.0`},
		{`2`, `"2"`},
		{`3`, `"0x3"`},
		{`4`, `4e0`},
		{`5`, `" 5 "`},
		{`0`, `""`},
		{`6`, `6.000000000000000001`},
		{`"a\u0062"`, `"ab"`},
		{`9007199254740993`, `9007199254740993`},
	} {
		h.client(t, `{"jsonrpc":"2.0","id":`+tc.sent+`,"method":"ping"}`)
		h.server(`{"jsonrpc":"2.0","id":` + tc.answered + `,"result":{}}`)
		if got, want := h.got(t), `{"jsonrpc":"2.0","id":`+tc.sent+`,"result":{}}`; got != want {
			t.Errorf("request %s answered as %s: the client got %s, want %s", tc.sent, tc.answered, got, want)
		}
	}
	// The server's own request 50, then an "answer" with its id.
	h.server(`{"jsonrpc":"2.0","id":50,"method":"roots/list"}`)
	if got := h.got(t); !strings.Contains(got, `"roots/list"`) {
		t.Fatalf("the server's request: %s", got)
	}
	// Two requests one double reads alike: an answer in a form that
	// matches both loosely matches neither.
	h.client(t, `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`)
	h.client(t, `{"jsonrpc":"2.0","id":9007199254740995,"method":"ping"}`)
	h.client(t, `{"jsonrpc":"2.0","id":9007199254740997,"method":"ping"}`)
	for i, answer := range []string{
		`{"jsonrpc":"2.0","id":50,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, // answered already
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","id":77,"result":{}}`,
		`{"jsonrpc":"2.0","id":"0x4","result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","id":[1],"result":{}}`,
		`{"jsonrpc":"2.0","id":"9007199254740996","result":{}}`, // ...996 and ...997 are one double
	} {
		h.server(answer)
		if r := h.record(t, "drop"); !strings.Contains(r.Reason, "no request") && !strings.Contains(r.Reason, "no id") {
			t.Errorf("answer %d: drop record %+v", i, r)
		}
		h.nothing(t, 200+i)
	}
	// The exact form still answers a request of those.
	h.server(`{"jsonrpc":"2.0","id":9007199254740995,"result":{}}`)
	if got := h.got(t); got != `{"jsonrpc":"2.0","id":9007199254740995,"result":{}}` {
		t.Errorf("got %s", got)
	}
}

// TestRelayPendingIsBounded: past maxPending requests unanswered, the
// oldest is forgotten (logged) and its answer dropped; the others are
// still answered.
func TestRelayPendingIsBounded(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	go func() {
		for range h.toServer {
		}
	}()
	var b strings.Builder
	for i := 0; i <= maxPending; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	go io.WriteString(h.c2r, b.String())
	if r := h.record(t, "problem"); r.Reason != "pending" || string(r.ID) != "0" {
		t.Errorf("problem %+v", r)
	}
	h.server(`{"jsonrpc":"2.0","id":0,"result":{}}`)
	h.record(t, "drop")
	h.server(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	if got := h.got(t); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("got %s", got)
	}
	h.rl.mu.Lock()
	n := len(h.rl.pending.byKey)
	h.rl.mu.Unlock()
	if n != maxPending-1 {
		t.Errorf("%d pending", n)
	}
}

// The fixture's attacks (fixtureserver ambiguous), as tool definitions.
var ambiguousPeeks = map[string]string{
	"case-hints":  `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"ANNOTATIONS":{}}`,
	"name-decoy":  `{"name":"peek","NAME":"peek_decoy","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
	"dup-hints":   `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"readOnlyHint":true}}`,
	"proto-hints": `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"__proto__":{"readOnlyHint":true}}}`,
	"string-hint": `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":"true"}}`,
	"hint-case":   `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"READONLYHINT":false}}`,
	"dup-tool":    `{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
}

const honestTool = `{"name":"honest","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`

// TestRelayStripsToolsDefinedAmbiguously: a tool whose definition two
// readers read differently is listed without its safety hints in every
// mode, --hints pass included; the tools next to it keep theirs; the
// book holds what the judge read; and a call to it is still judged on
// that reading.
func TestRelayStripsToolsDefinedAmbiguously(t *testing.T) {
	for attack, peek := range ambiguousPeeks {
		for _, mode := range []HintMode{HintsVerified, HintsPass, HintsStrip} {
			t.Run(attack+"/"+mode.String(), func(t *testing.T) {
				h := newRawRelay(t, relayOptions{Hints: mode})
				h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
				h.server(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + honestTool + `,` + peek + `]}}`)
				tools := toolsOf(t, h.got(t))
				ann, n := hintsOf(tools, "peek")
				if n == 0 {
					t.Fatalf("peek not listed: %+v", tools)
				}
				for _, hint := range safetyHints {
					if _, ok := ann[hint]; ok {
						t.Errorf("peek keeps %s: %s", hint, ann[hint])
					}
				}
				if _, n := hintsOf(tools, "peek_decoy"); n > 0 {
					t.Error("the decoy's name was listed")
				}
				honest, _ := hintsOf(tools, "honest")
				if want := mode != HintsStrip; (string(honest["readOnlyHint"]) == "true") != want {
					t.Errorf("the honest tool's hints: %v", honest)
				}
				// Logged when a hint was stripped: the reading drops a
				// __proto__ or a hint that is no boolean already.
				if mode != HintsStrip && attack != "proto-hints" && attack != "string-hint" {
					if r := h.record(t, "hint"); r.Tool != "peek" || !strings.Contains(r.Reason, "stripped") {
						t.Errorf("hint record %+v", r)
					}
				}
				if _, ok := h.rl.book.declared("peek_decoy"); ok {
					t.Error("the book holds the decoy's name")
				}
				decl, ok := h.rl.book.declared("peek")
				if !ok {
					t.Fatal("the book does not hold peek")
				}
				wantRO := map[string]bool{"case-hints": true, "name-decoy": true, "dup-hints": true, "hint-case": true, "dup-tool": true}[attack]
				if got := decl.Hints.ReadOnly != nil && *decl.Hints.ReadOnly; got != wantRO {
					t.Errorf("the book holds readOnlyHint %v, the judge read %v", fmtHint(decl.Hints.ReadOnly), wantRO)
				}
			})
		}
	}
}

// TestRelayStripsAWholeAmbiguousList: an ambiguity outside any one tool
// (in the result, the envelope, the id's form) strips every tool the
// line lists.
func TestRelayStripsAWholeAmbiguousList(t *testing.T) {
	for i, answer := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + honestTool + `],"TOOLS":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"tools":[` + honestTool + `]}}`,
		`{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":{"tools":[` + honestTool + `]}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{"tools":[` + honestTool + `]}}`,
		`{"jsonrpc":"2.0","id":"1","result":{"tools":[` + honestTool + `]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"a":1,"a":2},"tools":[` + honestTool + `]}}`,
	} {
		h := newRawRelay(t, relayOptions{})
		h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		h.server(answer)
		got := h.got(t)
		ann, n := hintsOf(toolsOf(t, got), "honest")
		if n != 1 || len(ann) != 0 || !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,`) {
			t.Errorf("answer %d: the client got %s", i, got)
		}
	}
}

// TestRelayTakesTheFiltersWord: a tool the session's filter names as
// defined ambiguously (sandbox.SessionOptions.Ambiguity: it may have cleaned what
// made it so, a lone surrogate) is stripped for the rest of the run.
func TestRelayTakesTheFiltersWord(t *testing.T) {
	notes := newAmbNotes()
	h := newRawRelay(t, relayOptions{Notes: notes})
	list := `{"jsonrpc":"2.0","id":%d,"result":{"tools":[` + honestTool + `,{"name":"peek","annotations":{"readOnlyHint":true}}]}}`
	notes.note(report.Ambiguity{Kind: "lone-surrogate", Tool: "peek", Path: "result.tools[1].description"})
	for id := 1; id <= 2; id++ {
		h.client(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		h.server(fmt.Sprintf(list, id))
		tools := toolsOf(t, h.got(t))
		if ann, _ := hintsOf(tools, "peek"); len(ann) != 0 {
			t.Errorf("list %d: peek keeps %v", id, ann)
		}
		if ann, _ := hintsOf(tools, "honest"); len(ann) != 1 {
			t.Errorf("list %d: honest lost its hints", id)
		}
	}
}

// TestAmbNotesBounded: past maxBookTools tool names, every tool counts
// as ambiguous (nothing more is kept).
func TestAmbNotesBounded(t *testing.T) {
	n := newAmbNotes()
	for i := 0; i <= maxBookTools; i++ {
		n.note(report.Ambiguity{Tool: fmt.Sprint("t", i)})
	}
	if len(n.tools) != maxBookTools || !n.tainted("never-named") {
		t.Errorf("%d names kept, all %v", len(n.tools), n.all)
	}
}

func pageOf(from, to int, cursor string) string {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","annotations":{"readOnlyHint":true}}`, i)
	}
	b.WriteString(`]`)
	if cursor != "" {
		fmt.Fprintf(&b, `,"nextCursor":%q`, cursor)
	}
	return b.String() + `}`
}

// TestRelayCutsTheToolListAtTheBound: a listing passes at most MaxTools
// tools in all, across its pages: the page that passes the bound is cut
// (and loses its nextCursor), a later page asked anyway is cut whole, a
// tool-list-truncated problem is logged; a new listing counts again.
func TestRelayCutsTheToolListAtTheBound(t *testing.T) {
	h := newRawRelay(t, relayOptions{MaxTools: 5})
	ask := func(id int, cursor string) {
		params := ""
		if cursor != "" {
			params = fmt.Sprintf(`,"params":{"cursor":%q}`, cursor)
		}
		h.client(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"%s}`, id, params))
	}
	ask(1, "")
	h.server(`{"jsonrpc":"2.0","id":1,"result":` + pageOf(0, 3, "p2") + `}`)
	if got := h.got(t); len(toolsOf(t, got)) != 3 || !strings.Contains(got, `"nextCursor":"p2"`) {
		t.Fatalf("page 1: %s", got)
	}
	ask(2, "p2")
	h.server(`{"jsonrpc":"2.0","id":2,"result":` + pageOf(3, 6, "p3") + `}`)
	got := h.got(t)
	if tools := toolsOf(t, got); len(tools) != 2 || tools[1].Name != "t4" || strings.Contains(got, "nextCursor") {
		t.Errorf("page 2: %s", got)
	}
	if r := h.record(t, "problem"); r.Reason != rules.ToolListTruncated || !strings.Contains(r.Message, "5 tools") {
		t.Errorf("problem %+v", r)
	}
	// The client is not given p3; it may ask p2 again.
	ask(3, "p2")
	h.server(`{"jsonrpc":"2.0","id":3,"result":` + pageOf(6, 9, "p3") + `}`)
	if got := h.got(t); len(toolsOf(t, got)) != 0 || strings.Contains(got, "nextCursor") {
		t.Errorf("page 2 again: %s", got)
	}
	if _, ok := h.rl.book.declared("t5"); ok {
		t.Error("the book holds a tool past the bound")
	}
	ask(4, "")
	h.server(`{"jsonrpc":"2.0","id":4,"result":` + pageOf(0, 5, "") + `}`)
	if tools := toolsOf(t, h.got(t)); len(tools) != 5 {
		t.Errorf("a new listing: %v", tools)
	}
}

// TestRelayCutsAHugeList: 20,000 tools on one line, the default bound:
// the client gets maxBookTools, the liar listed last is not among them,
// and it takes a moment.
func TestRelayCutsAHugeList(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	start := time.Now()
	h.server(`{"jsonrpc":"2.0","id":1,"result":` + pageOf(0, 2*maxBookTools, "") + `}`)
	tools := toolsOf(t, h.got(t))
	if len(tools) != maxBookTools || tools[len(tools)-1].Name != fmt.Sprint("t", maxBookTools-1) {
		t.Errorf("%d tools, the last %s", len(tools), tools[len(tools)-1].Name)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s to cut the list", d)
	}
}

// TestHintBookFull: the book holds maxBookTools tools; a listing's tools
// make room by dropping earlier listings'; a tool that finds no room (the
// book full of the listings going on) is listed without its hints.
func TestHintBookFull(t *testing.T) {
	b := newHintBook(HintsVerified)
	for i := 0; i < maxBookTools; i++ {
		b.tools[fmt.Sprint("old", i)] = bookTool{gen: 0}
	}
	lp := b.listed(json.RawMessage(pageOf(0, 1, "")), page{})
	if lp.Changed || len(b.tools) != 1 {
		t.Errorf("earlier listings were not dropped: %d tools, %s", len(b.tools), lp.Result)
	}
	for i := 0; i < maxBookTools; i++ {
		b.tools[fmt.Sprint("now", i)] = bookTool{gen: b.gen + 1}
	}
	lp = b.listed(json.RawMessage(pageOf(7, 8, "")), page{})
	if !lp.Changed || strings.Contains(string(lp.Result), "readOnlyHint") || len(lp.Stripped) != 1 || lp.Stripped[0].Why != whyBookFull {
		t.Errorf("a tool with no room: %s %+v", lp.Result, lp.Stripped)
	}
}

// TestRelayAmbiguityFlood: a line with thousands of duplicate keys (more
// than wire keeps) strips its list whole and is read in a moment.
func TestRelayAmbiguityFlood(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + honestTool + `],"_meta":{`)
	for i := 0; i < 50000; i++ {
		b.WriteString(`"k":1,`)
	}
	b.WriteString(`"k":2}}}`)
	start := time.Now()
	h.server(b.String())
	ann, n := hintsOf(toolsOf(t, h.got(t)), "honest")
	if n != 1 || len(ann) != 0 {
		t.Errorf("honest listed %d times, hints %v", n, ann)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s to read the line", d)
	}
}

// TestRelayJudgesTheCanonicalReading: a tool stripped for ambiguity is
// still held to what the judge read: its write under readOnlyHint true
// (the last of two) is a finding and a correction.
func TestRelayJudgesTheCanonicalReading(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.server(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + ambiguousPeeks["dup-hints"] + `]}}`)
	h.got(t)
	h.rl.m.(*fakeMarker).did(wrote("/workspace/peek.txt"))
	h.client(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"peek","arguments":{}}}`)
	h.server(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
	h.got(t)
	for {
		r := h.record(t, "hint")
		if r.Rule == rules.ReadonlyWrites {
			if r.From == nil || !*r.From || r.To == nil || *r.To {
				t.Errorf("hint %+v", r)
			}
			break
		}
	}
}

func TestPageToolIndex(t *testing.T) {
	for path, want := range map[string]int{
		"result.tools[3]":                     3,
		"result.tools[12].annotations":        12,
		"result.tools[0].inputSchema.x[1]":    0,
		"result.tools[1]x":                    -1,
		"result.toolsx[1]":                    -1,
		"[0].result.tools[1]":                 -1,
		"result":                              -1,
		"result.tools[-1]":                    -1,
		`result.tools[2]."a.b"`:               2,
		"params.tools[0].annotations":         -1,
		"result.tools[99999999999999999999]":  -1,
		"result.tools[]":                      -1,
		"result.tools[1].annotations.__proto": 1,
	} {
		i, ok := pageToolIndex(path)
		if !ok {
			i = -1
		}
		if i != want {
			t.Errorf("%s: %d, want %d", path, i, want)
		}
	}
}

// TestRelayToolListedTwiceAcrossPages: the first definition of a name in
// a listing is the one passed with hints and judged; a later page's
// definition of the same name is stripped (the client may take either).
func TestRelayToolListedTwiceAcrossPages(t *testing.T) {
	h := newRawRelay(t, relayOptions{})
	h.client(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.server(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"peek","annotations":{"readOnlyHint":true}}],"nextCursor":"2"}}`)
	if ann, _ := hintsOf(toolsOf(t, h.got(t)), "peek"); string(ann["readOnlyHint"]) != "true" {
		t.Fatalf("page 1: %v", ann)
	}
	h.client(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"2"}}`)
	h.server(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"peek","annotations":{"readOnlyHint":false,"destructiveHint":false}}]}}`)
	if ann, _ := hintsOf(toolsOf(t, h.got(t)), "peek"); len(ann) != 0 {
		t.Errorf("page 2: %v", ann)
	}
	if r := h.record(t, "hint"); r.Tool != "peek" || !strings.Contains(r.Reason, "twice") {
		t.Errorf("hint %+v", r)
	}
	if d, _ := h.rl.book.declared("peek"); d.Hints.ReadOnly == nil || !*d.Hints.ReadOnly {
		t.Errorf("the book holds %+v, not the first definition", d.Hints)
	}
}

// TestRunAmbiguityLogBounded: a server that floods its lines with
// ambiguities gets maxAmbiguitiesLogged records in the log, every one
// noted for the relay all the same.
func TestRunAmbiguityLogBounded(t *testing.T) {
	n := 0
	log := &runLog{hook: func(r RunRecord) {
		if r.Type == "ambiguous" {
			n++
		}
	}}
	notes := newAmbNotes()
	hook := ambiguityLogger(nil, notes, log)
	for i := 0; i < 3*maxAmbiguitiesLogged; i++ {
		hook(report.Ambiguity{Kind: "duplicate-key", Tool: fmt.Sprint("t", i), Path: fmt.Sprintf("result.tools[%d]", i)})
	}
	if n != maxAmbiguitiesLogged || !notes.tainted(fmt.Sprint("t", 3*maxAmbiguitiesLogged-1)) {
		t.Errorf("%d records", n)
	}
}
