package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
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

func (m HintMode) String() string { return enumName(hintModeNames, int(m)) }

// ParseHintMode reads verified, strip or pass.
func ParseHintMode(s string) (HintMode, error) {
	v, err := parseEnum(hintModeNames, "hints", s)
	return HintMode(v), err
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

	mu     sync.Mutex
	tools  map[string]report.Tool      // as declared
	fixes  map[string]map[string]bool  // tool -> hint -> the value sent instead
	denies map[string]denial           // tool -> why its calls are refused
	seen   map[string]map[string]*bool // tool -> hint -> as declared, for the log
}

func newHintBook(mode HintMode) *hintBook {
	return &hintBook{mode: mode, tools: map[string]report.Tool{}, fixes: map[string]map[string]bool{}, denies: map[string]denial{}}
}

// maxBookTools bounds the tools remembered as declared: a server that
// lists without end grows nothing past it (those past it are judged
// without hints, and so never corrected: they are logged).
const maxBookTools = 10000

func (b *hintBook) declared(name string) (report.Tool, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tools[name]
	return t, ok
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
		from = hintOf(t.Hints, fix.Hint)
	}
	if b.fixes[tool] == nil {
		b.fixes[tool] = map[string]bool{}
	}
	b.fixes[tool][fix.Hint] = fix.Value
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

// deny records that tool's calls are refused; false when they were.
func (b *hintBook) deny(tool string, d denial) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.denies[tool]; ok {
		return false
	}
	b.denies[tool] = d
	return true
}

func (b *hintBook) denied(tool string) (denial, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.denies[tool]
	return d, ok
}

// listed records the tools of a tools/list result as the server declared
// them and returns the result as the client is to see it, and whether it
// differs. Only the annotations of the tools rewritten change; anything
// that does not decode is passed on as it is.
func (b *hintBook) listed(result json.RawMessage) (json.RawMessage, bool) {
	res, err := parseObject(result)
	if err != nil {
		return result, false
	}
	raw, _ := res.get("tools")
	tools, err := parseArray(raw)
	if err != nil {
		return result, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := false
	for i, raw := range tools {
		t, err := decodeTool(raw)
		if err != nil {
			continue
		}
		if _, ok := b.tools[t.Name]; ok || len(b.tools) < maxBookTools {
			b.tools[t.Name] = t
		}
		if out, did := b.rewrite(raw, t); did {
			tools[i], changed = out, true
		}
	}
	if !changed {
		return result, false
	}
	return res.set("tools", encodeArray(tools)).encode(), true
}

// rewrite is one tool as the client is to see it (mu held).
func (b *hintBook) rewrite(raw json.RawMessage, t report.Tool) (json.RawMessage, bool) {
	if b.mode == HintsPass || string(t.Annotations) == "null" {
		return raw, false
	}
	ann, err := parseObject(t.Annotations)
	if err != nil {
		return raw, false
	}
	did := false
	switch b.mode {
	case HintsStrip:
		for _, h := range safetyHints {
			var d bool
			ann, d = ann.del(h)
			did = did || d
		}
	case HintsVerified:
		for _, h := range safetyHints {
			// A hint that is no boolean is no claim the rules hold the tool
			// to, but a client may read "yes" or 1 as true: it goes.
			if v, ok := ann.get(h); ok {
				if t := string(bytes.TrimSpace(v)); t != "true" && t != "false" {
					ann, _ = ann.del(h)
					did = true
					continue
				}
			}
			v, ok := b.fixes[t.Name][h]
			// Absent, the spec's default is the safe side already.
			if cur := hintOf(t.Hints, h); ok && cur != nil && *cur != v {
				ann = ann.set(h, json.RawMessage(fmt.Sprint(v)))
				did = true
			}
		}
	}
	if !did {
		return raw, false
	}
	tool, err := parseObject(raw)
	if err != nil {
		return raw, false
	}
	return tool.set("annotations", ann.encode()).encode(), true
}

// rootMap translates the file roots a client gives under a host
// directory to where the server sees it.
type rootMap struct {
	Host, Target string // clean absolute paths
}

// translate rewrites the file URIs under Host of a roots/list result.
func (m *rootMap) translate(result json.RawMessage) (json.RawMessage, bool) {
	res, err := parseObject(result)
	if err != nil {
		return result, false
	}
	raw, ok := res.get("roots")
	if !ok {
		return result, false
	}
	roots, err := parseArray(raw)
	if err != nil {
		return result, false
	}
	changed := false
	for i, r := range roots {
		root, err := parseObject(r)
		if err != nil {
			continue
		}
		var uri string
		u, _ := root.get("uri")
		if json.Unmarshal(u, &uri) != nil {
			continue
		}
		if p, ok := m.path(uri); ok {
			nu, _ := json.Marshal("file://" + p)
			roots[i], changed = root.set("uri", nu).encode(), true
		}
	}
	if !changed {
		return result, false
	}
	return res.set("roots", encodeArray(roots)).encode(), true
}

// translateInputs rewrites the roots among the inputResponses of a
// request's params (multi-round-trip, 2026-07-28), where a client
// answers the roots a result asked for.
func (m *rootMap) translateInputs(params json.RawMessage) (json.RawMessage, bool) {
	p, err := parseObject(params)
	if err != nil {
		return params, false
	}
	raw, ok := p.get("inputResponses")
	if !ok {
		return params, false
	}
	in, err := parseObject(raw)
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
	return p.set("inputResponses", in.encode()).encode(), true
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
	// problem, kept (a named run's container, kept: Message is its name)
	// or end.
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
}

// runLog writes the records, and a short human line for each (stderr,
// which clients show in their MCP logs).
type runLog struct {
	mu    sync.Mutex
	jsonl io.Writer // nil: no --log
	human io.Writer // nil: quiet
	// Hook, if set, sees each record once written (tests wait on it).
	hook func(RunRecord)
	// redact keeps the watched secrets' values out of what is written.
	redact []report.Placeholder
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
			l.jsonl.Write(append([]byte(report.RedactJSON(string(b), l.redact)), '\n'))
		}
	}
	if l.human != nil && human != "" {
		fmt.Fprintf(l.human, "mcpsandbox: %s\n", report.Printable(report.RedactString(human, l.redact)))
	}
	if l.hook != nil {
		l.hook(r)
	}
}
