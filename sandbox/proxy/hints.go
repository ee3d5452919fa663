package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// HintMode is what run does with the tools' safety hints in tools/list.
type HintMode int

const (
	// HintsVerified rewrites a hint toward the safe side once the tool is
	// seen contradicting it (or an earlier scan saw it: --verdicts).
	HintsVerified HintMode = iota + 1
	// HintsStrip removes every safety hint, so that clients always ask.
	HintsStrip
	// HintsPass leaves the hints as the server sent them.
	HintsPass
)

var hintModeNames = []string{HintsVerified: "verified", HintsStrip: "strip", HintsPass: "pass"}

func (m HintMode) String() string {
	if m <= 0 || int(m) >= len(hintModeNames) {
		return fmt.Sprintf("mode(%d)", int(m))
	}
	return hintModeNames[m]
}

// ParseHintMode reads verified, strip or pass; another word is an error
// wrapping sandbox.ErrUnknownMode, as the session's modes' are.
func ParseHintMode(s string) (HintMode, error) {
	if i := slices.Index(hintModeNames, s); i > 0 {
		return HintMode(i), nil
	}
	return 0, fmt.Errorf("%w: hints %q (want %s)", sandbox.ErrUnknownMode, s, strings.Join(hintModeNames[1:], ", "))
}

// Set and Type make HintMode a command-line flag value.
func (m *HintMode) Set(s string) (err error) { *m, err = ParseHintMode(s); return err }
func (m HintMode) Type() string              { return "mode" }

// safetyHints are the annotations --hints strip removes.
var safetyHints = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// hintFix is a hint set toward the safe side.
type hintFix struct {
	Hint  string
	Value bool
}

// hintFixes are the corrections each hint rule's finding makes (the rule
// decides the contradiction; this only says which way is safe).
var hintFixes = map[string]hintFix{
	rules.ReadonlyWrites:        {Hint: "readOnlyHint", Value: false},
	rules.NondestructiveDeletes: {Hint: "destructiveHint", Value: true},
	rules.ClosedWorldNetwork:    {Hint: "openWorldHint", Value: true},
}

// denial is why a tool's calls are refused.
type denial struct{ Rule, Reason string }

// hintBook holds the tools as the server last listed them and what run
// corrects in them, and rewrites tools/list results accordingly.
type hintBook struct {
	mode HintMode
	// bound is the most tools one listing passes to the client, across
	// its pages (min(maxBookTools, Bounds.MaxTools)): past it the list is
	// cut, so that no tool reaches the client unread.
	bound int

	mu     sync.Mutex
	tools  map[string]bookTool         // as declared (the judge's reading)
	fixes  map[string]map[string]bool  // tool -> hint -> the value sent instead
	denies map[string]denial           // tool -> why its calls are refused
	seen   map[string]map[string]*bool // tool -> hint -> as declared, for the log
	// The server's record (trust.go): hints corrected for every tool,
	// hints whose claimants are all refused, every hint stripped (why),
	// and the identities that carry a record across a rename.
	serverFixes  map[string]bool
	serverDenies map[string]denial
	stripAll     string
	everSeen     map[string]sighting
	recBy        map[string][]string // identity key -> tools with a record of their own
	indexed      map[string]bool     // the tools in recBy
	sightOrder   []string            // the names sighted, oldest first, for eviction
	ownRecord    map[string]bool     // the tools in recBy whose record is run's of them
	pages        int                 // pages listed: the order of sightings
	// distrust: hint -> the page after which the server broke it; a
	// tool first sighted later is not trusted with it.
	distrust map[string]int
	// gen numbers the listings; cursors are the listings a page's
	// nextCursor continues (by the cursor's hash), the last maxCursors.
	gen     int
	cursors map[[sha256.Size]byte]*listing
	order   [][sha256.Size]byte
}

// bookTool is a tool as declared, and the listing that declared it.
type bookTool struct {
	tool report.Tool
	gen  int
}

// listing is one tools/list listing: a request without a cursor and
// the pages that follow it.
type listing struct {
	gen   int
	count int             // tools passed to the client so far
	names map[string]bool // their names
	cut   bool
}

func newHintBook(mode HintMode) *hintBook {
	return &hintBook{mode: mode, bound: maxBookTools, tools: map[string]bookTool{}, fixes: map[string]map[string]bool{},
		denies: map[string]denial{}, cursors: map[[sha256.Size]byte]*listing{},
		serverFixes: map[string]bool{}, serverDenies: map[string]denial{}, everSeen: map[string]sighting{}, recBy: map[string][]string{}, indexed: map[string]bool{}, ownRecord: map[string]bool{}, distrust: map[string]int{}}
}

// maxBookTools bounds the tools remembered as declared, and so the tools
// one listing passes (see hintBook.bound): a server that lists without
// end grows nothing past it.
const maxBookTools = 10000

// maxCursors bounds the cursors remembered for the listings they
// continue. A page asked with a cursor not remembered starts a listing
// of its own (counted from 0): only a client paginating more than this
// many listings at once meets one.
const maxCursors = 64

// names are the tools as last listed, sorted.
func (b *hintBook) names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.tools))
	for n := range b.tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (b *hintBook) declared(name string) (report.Tool, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tools[name]
	return t.tool, ok
}

// correct records fix for tool; it returns the value the tool declared
// and whether the fix is new and changes what the client is told (a
// hint absent or already safe needs none: its default is the safe side).
func (b *hintBook) correct(tool string, fix hintFix) (*bool, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.fixes[tool][fix.Hint]; ok && v == fix.Value {
		return nil, false
	}
	var from *bool
	if t, ok := b.tools[tool]; ok {
		from = hintOf(t.tool.Hints, fix.Hint)
	}
	if b.fixes[tool] == nil {
		b.fixes[tool] = map[string]bool{}
	}
	b.fixes[tool][fix.Hint] = fix.Value
	b.noteRecord(tool, true)
	b.distrustNew(fix.Hint)
	return from, true
}

func hintOf(h report.Hints, name string) *bool {
	switch name {
	case "readOnlyHint":
		return h.ReadOnly
	case "destructiveHint":
		return h.Destructive
	case "idempotentHint":
		return h.Idempotent
	case "openWorldHint":
		return h.OpenWorld
	}
	return nil
}

// observe records that tool was seen doing what hint's unsafe side
// denies (the effects of a call pinned on it, judged against every
// claim it could make): a later listing that claims it is corrected. It
// says whether the tool's current listing claims it (the client was told
// otherwise and must list again).
func (b *hintBook) observe(tool string, fix hintFix) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.fixes[tool][fix.Hint]; ok && v == fix.Value {
		return false
	}
	if b.fixes[tool] == nil {
		b.fixes[tool] = map[string]bool{}
	}
	b.fixes[tool][fix.Hint] = fix.Value
	b.noteRecord(tool, true) // what it did is its own
	t, ok := b.tools[tool]
	return ok && claims(t.tool.Hints, fix.Hint)
}

// deny records that tool's calls are refused; false when they were.
func (b *hintBook) deny(tool string, d denial) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.denies[tool]; ok {
		return false
	}
	b.denies[tool] = d
	b.noteRecord(tool, true)
	return true
}

// denied is why tool's calls are refused: its own record, or a hint it
// claims that the server broke past deny-server-after.
func (b *hintBook) denied(tool string) (denial, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.everSeen[tool]; !ok {
		if t, listed := b.tools[tool]; listed {
			b.sight(t.tool, b.pages) // forgotten in a flood: sighted again
		}
	}
	b.catchUp(tool, nil)
	if d, ok := b.denies[tool]; ok {
		return d, ok
	}
	return b.serverDenial(tool)
}

// page is what the relay knows of one tools/list answer beyond its
// result: the request's cursor, and where the line was ambiguous.
type page struct {
	// Cursor is the request's (nil: none, a new listing).
	Cursor *string
	// Whole: the line was ambiguous outside any one tool's definition
	// (its envelope, its result, its id's form): every tool in it counts
	// as defined ambiguously.
	Whole bool
	// Ambiguous says whether tool i of the page, named name, was defined
	// ambiguously (nil: none was).
	Ambiguous func(i int, name string) bool
}

// listedPage is a tools/list result as the client is to see it, and what
// was done to it.
type listedPage struct {
	Result  json.RawMessage
	Changed bool
	// Stripped are the tools whose safety hints were removed whatever
	// the mode, and why.
	Stripped []stripped
	// Cut counts the tools removed past the bound; Listed the tools the
	// listing passed in all.
	Cut, Listed int
	// Inherited are the tools new under their name that took another's
	// record.
	Inherited []inherited
}

type stripped struct{ Tool, Why string }

// The reasons a tool's safety hints are stripped whatever the mode.
const (
	whyAmbiguous   = "its definition was ambiguous (two JSON readers read it differently)"
	whyWhole       = "the tools/list answer it came in was ambiguous (two JSON readers read it differently)"
	whyTwice       = "it is listed twice in one listing (the first is the one judged)"
	whyNoBoolean   = "a safety hint of its is no boolean (true to a reader that coerces)"
	whyUndecodable = "its definition does not decode, so its hints were not read"
	whyBookFull    = "the hint book is full, so its hints are not held for correction"
	whyNotSighted  = "the book of tool identities is full of tools with a record, so it could not be told from them"
)

// listed records the tools of a tools/list result (canonical: read by
// wire.Read) as the server declared them and returns the result as the
// client is to see it. Only the annotations of the tools rewritten
// change, and the tools past the bound are cut; anything that does not
// decode as a tool list is passed on as it is (no client reads it as one).
func (b *hintBook) listed(result json.RawMessage, pg page) listedPage {
	out := listedPage{Result: result}
	res, err := wire.ParseObject(result)
	if err != nil {
		return out
	}
	raw, _ := res.Get("tools")
	tools, err := wire.ParseArray(raw)
	if err != nil {
		return out
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pages++
	l := b.listing(pg.Cursor)
	present := map[string]bool{}
	for _, raw := range tools {
		var n struct {
			Name string `json:"name"`
		}
		if wire.Unmarshal(raw, &n) == nil {
			present[n.Name] = true
		}
	}
	kept := tools[:0:0]
	for i, raw := range tools {
		if l.count >= b.bound {
			out.Cut = len(tools) - i
			break
		}
		l.count++
		kept = append(kept, raw)
		why := ""
		t, err := sandbox.DecodeTool(raw)
		switch {
		case err != nil:
			why = whyUndecodable
		case l.names[t.Name]:
			why = whyTwice
		default:
			l.names[t.Name] = true
			fresh, sighted := b.sight(t, b.pages)
			out.Inherited = append(out.Inherited, b.catchUp(t.Name, present)...)
			if fresh {
				// Distrusted hints are not stored: rewrite reads them from
				// the sighting, so that a flood of new names costs nothing.
				for _, h := range b.distrusted(t.Name) {
					out.Inherited = append(out.Inherited, inherited{Tool: t.Name, Why: "first listed after the server broke " + h})
				}
			}
			if !b.record(t, l.gen) {
				why = whyBookFull
			}
			switch {
			case !sighted:
				why = whyNotSighted
			case b.stripAll != "":
				why = b.stripAll
			case pg.Whole:
				why = whyWhole
			case pg.Ambiguous != nil && pg.Ambiguous(i, t.Name):
				why = whyAmbiguous
			case !booleanHints(t.Annotations):
				why = whyNoBoolean
			}
		}
		var o json.RawMessage
		var did bool
		if why != "" {
			o, did = stripHints(raw)
			if did && b.mode != HintsStrip {
				name := t.Name
				if err != nil {
					name = fmt.Sprintf("#%d", i)
				}
				out.Stripped = append(out.Stripped, stripped{name, why})
			}
		} else {
			o, did = b.rewrite(raw, t)
		}
		if did {
			kept[len(kept)-1], out.Changed = o, true
		}
	}
	out.Listed = l.count
	if out.Cut > 0 {
		// The client is not sent further: a later page would be cut
		// whole.
		l.cut, out.Changed = true, true
		res, _ = res.Del("nextCursor")
	} else if c, ok := res.Get("nextCursor"); ok && !l.cut {
		var cursor string
		if wire.Unmarshal(c, &cursor) == nil {
			b.remember(cursor, l)
		}
	}
	if !out.Changed {
		return out
	}
	out.Result = res.Set("tools", wire.EncodeArray(kept)).Encode()
	return out
}

// listing is the listing a page asked with cursor belongs to (mu held).
func (b *hintBook) listing(cursor *string) *listing {
	if cursor != nil {
		if l, ok := b.cursors[sha256.Sum256([]byte(*cursor))]; ok {
			return l
		}
	}
	b.gen++
	return &listing{gen: b.gen, names: map[string]bool{}}
}

// remember notes that cursor continues l (mu held).
func (b *hintBook) remember(cursor string, l *listing) {
	k := sha256.Sum256([]byte(cursor))
	if _, ok := b.cursors[k]; !ok {
		if len(b.order) >= maxCursors {
			delete(b.cursors, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, k)
	}
	b.cursors[k] = l
}

// record keeps t as declared by listing gen (mu held); false when the
// book is full of the tools of this listing (or of listings going on at
// once): then its hints are not held for correction, and so not given.
func (b *hintBook) record(t report.Tool, gen int) bool {
	if _, ok := b.tools[t.Name]; !ok && len(b.tools) >= maxBookTools {
		// The tools of earlier listings make room: the client lists again
		// when told the list changed, so it holds the latest.
		for n, bt := range b.tools {
			if bt.gen < gen {
				delete(b.tools, n)
			}
		}
		if len(b.tools) >= maxBookTools {
			return false
		}
	}
	b.tools[t.Name] = bookTool{tool: t, gen: gen}
	return true
}

// booleanHints says whether every safety hint in annotations is a
// boolean (or absent).
func booleanHints(annotations json.RawMessage) bool {
	ann, err := wire.ParseObject(annotations)
	if err != nil {
		return true
	}
	for _, h := range safetyHints {
		if v, ok := ann.Get(h); ok {
			if t := string(bytes.TrimSpace(v)); t != "true" && t != "false" {
				return false
			}
		}
	}
	return true
}

// stripHints is one tool with its safety hints removed: the safe default
// every client reads alike.
func stripHints(raw json.RawMessage) (json.RawMessage, bool) {
	tool, err := wire.ParseObject(raw)
	if err != nil {
		return raw, false
	}
	a, ok := tool.Get("annotations")
	if !ok {
		return raw, false
	}
	ann, err := wire.ParseObject(a)
	if err != nil {
		return raw, false
	}
	did := false
	for _, h := range safetyHints {
		var d bool
		ann, d = ann.Del(h)
		did = did || d
	}
	if !did {
		return raw, false
	}
	return tool.Set("annotations", ann.Encode()).Encode(), true
}

// rewrite is one tool as the client is to see it (mu held).
func (b *hintBook) rewrite(raw json.RawMessage, t report.Tool) (json.RawMessage, bool) {
	switch b.mode {
	case HintsPass:
		return raw, false
	case HintsStrip:
		return stripHints(raw)
	}
	if string(t.Annotations) == "null" {
		return raw, false
	}
	ann, err := wire.ParseObject(t.Annotations)
	if err != nil {
		return raw, false
	}
	did := false
	distrusted := b.distrusted(t.Name)
	for _, h := range safetyHints {
		v, ok := b.fixes[t.Name][h]
		if !ok {
			v, ok = b.serverFixes[h]
		}
		if !ok && slices.Contains(distrusted, h) {
			v, ok = hintFixes[hintRule(h)].Value, true
		}
		// Absent, the spec's default is the safe side already.
		if cur := hintOf(t.Hints, h); ok && cur != nil && *cur != v {
			ann = ann.Set(h, json.RawMessage(fmt.Sprint(v)))
			did = true
		}
	}
	if !did {
		return raw, false
	}
	tool, err := wire.ParseObject(raw)
	if err != nil {
		return raw, false
	}
	return tool.Set("annotations", ann.Encode()).Encode(), true
}

// rootMap translates the file roots a client gives under a host
// directory to where the server sees it.
type rootMap struct {
	Host, Target string // clean absolute paths
}

// translate rewrites the file URIs under Host of a roots/list result.
func (m *rootMap) translate(result json.RawMessage) (json.RawMessage, bool) {
	res, err := wire.ParseObject(result)
	if err != nil {
		return result, false
	}
	raw, ok := res.Get("roots")
	if !ok {
		return result, false
	}
	roots, err := wire.ParseArray(raw)
	if err != nil {
		return result, false
	}
	changed := false
	for i, r := range roots {
		root, err := wire.ParseObject(r)
		if err != nil {
			continue
		}
		var uri string
		u, _ := root.Get("uri")
		if wire.Unmarshal(u, &uri) != nil {
			continue
		}
		if p, ok := m.path(uri); ok {
			nu, _ := json.Marshal("file://" + p)
			roots[i], changed = root.Set("uri", nu).Encode(), true
		}
	}
	if !changed {
		return result, false
	}
	return res.Set("roots", wire.EncodeArray(roots)).Encode(), true
}

// translateInputs rewrites the roots among the inputResponses of a
// request's params (multi-round-trip, 2026-07-28), where a client
// answers the roots a result asked for.
func (m *rootMap) translateInputs(params json.RawMessage) (json.RawMessage, bool) {
	p, err := wire.ParseObject(params)
	if err != nil {
		return params, false
	}
	raw, ok := p.Get("inputResponses")
	if !ok {
		return params, false
	}
	in, err := wire.ParseObject(raw)
	if err != nil {
		return params, false
	}
	changed := false
	for i, f := range in {
		if out, did := m.translate(f.Val); did {
			in[i].Val, changed = out, true
		}
	}
	if !changed {
		return params, false
	}
	return p.Set("inputResponses", in.Encode()).Encode(), true
}

// path is the target path of a file URI under Host.
func (m *rootMap) path(uri string) (string, bool) {
	p, ok := strings.CutPrefix(uri, "file://")
	if !ok || !strings.HasPrefix(p, "/") {
		return "", false
	}
	p = path.Clean(p)
	switch {
	case p == m.Host:
		return m.Target, true
	case strings.HasPrefix(p, m.Host+"/"):
		return m.Target + p[len(m.Host):], true
	}
	return "", false
}

// RunRecord is one line of run's --log (JSON Lines): a call and its
// effects, a phase between calls, a finding, a hint corrected, a call
// refused, the start and the end.
type RunRecord struct {
	Time string `json:"time"`
	// Type is start, call, phase, finding, hint, policy, deny, notify,
	// request and notification (what the server asks or tells the client
	// on its own: Method, Bytes, the call in flight), impersonation (one
	// that spoke as mcpsandbox, marked), watch (an elicitation's answer
	// watched),
	// ambiguous (a place in a server's message where two JSON readers
	// part: Kind, Method, Tool, Path, Key, Detail), drop (a message of the
	// server's not passed on: an answer to no request of the client's, a
	// line no strict reader takes), problem, kept (a named run's
	// container, kept: Message is its name) or end.
	Type string          `json:"type"`
	Seq  int             `json:"seq,omitempty"`
	ID   json.RawMessage `json:"id,omitempty"`
	Tool string          `json:"tool,omitempty"`
	// Overlap lists the calls that overlapped this one: the effects are
	// theirs together (on the first's record; the others' EffectsOf names
	// it).
	Overlap    []int            `json:"overlap,omitempty"`
	EffectsOf  int              `json:"effectsOf,omitempty"`
	Candidates []string         `json:"candidates,omitempty"`
	DurationMs *int64           `json:"durationMs,omitempty"`
	IsError    bool             `json:"isError,omitempty"`
	FailsBy    string           `json:"failsBy,omitempty"`
	Error      string           `json:"error,omitempty"`
	Phase      string           `json:"phase,omitempty"`
	After      int              `json:"after,omitempty"`
	Effects    *report.Effects  `json:"effects,omitempty"`
	Rule       string           `json:"rule,omitempty"`
	Severity   string           `json:"severity,omitempty"`
	Hint       string           `json:"hint,omitempty"`
	From       *bool            `json:"from,omitempty"`
	To         *bool            `json:"to,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	Message    string           `json:"message,omitempty"`
	Evidence   []string         `json:"evidence,omitempty"`
	Problems   []report.Problem `json:"problems,omitempty"`
	Container  string           `json:"container,omitempty"`
	// An ambiguity's (type ambiguous): see report.Ambiguity.
	Kind    string `json:"kind,omitempty"`
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	Key     string `json:"key,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	// Bytes is the size of a message the server sent the client on its
	// own (type request or notification).
	Bytes int `json:"bytes,omitempty"`
}

func (l *runLog) placeholders() []report.Placeholder {
	if l.redact == nil {
		return nil
	}
	return l.redact()
}

// runLog writes the records, and a short human line for each (stderr,
// which clients show in their MCP logs).
type runLog struct {
	mu    sync.Mutex
	jsonl io.Writer // nil: no --log
	human io.Writer // nil: quiet
	// Hook, if set, sees each record once written (tests wait on it).
	hook func(RunRecord)
	// redact keeps the watched values out of what is written (nil:
	// none is watched).
	redact func() []report.Placeholder
}

func (l *runLog) record(r RunRecord, human string) {
	if l == nil {
		return
	}
	r.Time = time.Now().UTC().Format(time.RFC3339Nano)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.jsonl != nil {
		if b, err := json.Marshal(r); err == nil {
			l.jsonl.Write(append([]byte(report.RedactJSON(string(b), l.placeholders())), '\n'))
		}
	}
	if l.human != nil && human != "" {
		fmt.Fprintf(l.human, "mcpsandbox: %s\n", report.Printable(report.RedactString(human, l.placeholders())))
	}
	if l.hook != nil {
		l.hook(r)
	}
}
