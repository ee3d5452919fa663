package scriptmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// API is a model API the endpoint speaks.
type API int

const (
	APIOpenAI API = iota + 1
	APIAnthropic
	APIGemini
)

func (a API) String() string {
	switch a {
	case APIOpenAI:
		return "openai"
	case APIAnthropic:
		return "anthropic"
	case APIGemini:
		return "gemini"
	}
	return fmt.Sprintf("api(%d)", int(a))
}

// Action is what the endpoint answered a turn with.
type Action int

const (
	ActionToolCall Action = iota + 1 // it asked for the leg's tool
	ActionEnd                        // it ended the conversation
)

func (a Action) String() string {
	switch a {
	case ActionToolCall:
		return "tool-call"
	case ActionEnd:
		return "end"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// MarshalText makes an Action a JSON string.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (a *Action) UnmarshalText(b []byte) error {
	for _, v := range []Action{ActionToolCall, ActionEnd} {
		if v.String() == string(b) {
			*a = v
			return nil
		}
	}
	return fmt.Errorf("unknown action %q", b)
}

// Turn is one request the endpoint answered.
type Turn struct {
	API     string   `json:"api"`
	Path    string   `json:"path"`
	Stream  bool     `json:"stream,omitempty"`
	Model   string   `json:"model,omitempty"`
	Offered []string `json:"offered"` // the tool names the client offered, as sent (bounded)
	// Matched is the offered name whose stem is the leg's tool ("" none).
	Matched string `json:"matched,omitempty"`
	// ToolResults is set when the conversation already held a tool's
	// result (or refusal): the first turn is over.
	ToolResults bool   `json:"toolResults,omitempty"`
	Action      Action `json:"action"`
}

// Options configures an endpoint.
type Options struct {
	// Tool is the stem of the tool to ask for ("alpha").
	Tool string
	// MaxCalls bounds the tool calls asked for in a run (default 2): a
	// client that keeps asking the model again is not driven in a loop.
	MaxCalls int
	// MaxTurns bounds the turns recorded (default 200); the rest are
	// counted.
	MaxTurns int
	// MaxBody bounds a request body (default 8 MiB): past it, 413.
	MaxBody int64
}

// Endpoint is the scripted model: an http.Handler.
type Endpoint struct {
	opts Options

	mu      sync.Mutex
	turns   []Turn
	dropped int
	refused int // requests refused unread: over MaxBody
	calls   int
	seq     int
}

// New returns an endpoint.
func New(opts Options) *Endpoint {
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = 2
	}
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = 200
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 8 << 20
	}
	return &Endpoint{opts: opts}
}

// Refused counts the requests refused for their size (MaxBody).
func (e *Endpoint) Refused() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused
}

// SetTool changes the tool the endpoint asks for and resets its count.
func (e *Endpoint) SetTool(stem string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opts.Tool, e.calls = stem, 0
}

// Turns returns the turns recorded so far and how many were past the
// bound.
func (e *Endpoint) Turns() ([]Turn, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.turns), e.dropped
}

// maxOffered bounds the names kept of one turn's offered tools, and
// maxName each name.
const (
	maxOffered = 64
	maxName    = 128
)

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// Match returns the name in names whose last word (split at anything not
// a letter or digit: mcp__twin__alpha, twin.alpha, twin-alpha) is stem;
// of several, the shortest, then the first in order. ok is false when none
// is.
func Match(names []string, stem string) (string, bool) {
	best := ""
	for _, n := range names {
		words := nonWord.Split(n, -1)
		for len(words) > 0 && words[len(words)-1] == "" {
			words = words[:len(words)-1]
		}
		if len(words) == 0 || !strings.EqualFold(words[len(words)-1], stem) {
			continue
		}
		if best == "" || len(n) < len(best) {
			best = n
		}
	}
	return best, best != ""
}

// decide records a turn and says whether to call a tool (and which).
func (e *Endpoint) decide(t Turn) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	name, ok := Match(t.Offered, e.opts.Tool)
	t.Matched = name
	t.Action = ActionEnd
	if ok && !t.ToolResults && e.calls < e.opts.MaxCalls {
		e.calls++
		t.Action = ActionToolCall
	}
	if len(t.Offered) > maxOffered {
		t.Offered = t.Offered[:maxOffered]
	}
	for i, n := range t.Offered {
		if len(n) > maxName {
			t.Offered[i] = n[:maxName]
		}
	}
	// The answer names the tool whole; the record is bounded.
	if len(t.Matched) > maxName {
		t.Matched = t.Matched[:maxName]
	}
	if len(e.turns) >= e.opts.MaxTurns {
		e.dropped++
	} else {
		e.turns = append(e.turns, t)
	}
	return name, t.Action == ActionToolCall
}

func (e *Endpoint) nextID(prefix string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return fmt.Sprintf("%s_twin%04d", prefix, e.seq)
}

// endText is what the model says when it ends the conversation.
const endText = "Done."

// ServeHTTP answers the APIs by path: .../chat/completions,
// .../responses, .../messages, .../models/NAME:generateContent and
// :streamGenerateContent. A GET of .../models lists one model.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if r.Method == http.MethodGet && strings.HasSuffix(p, "/models") {
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "scripted", "object": "model", "owned_by": "mcpsandbox"}},
			"models": []any{map[string]any{"name": "models/scripted"}}})
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, e.opts.MaxBody+1))
	if err != nil {
		http.Error(w, "reading the request", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > e.opts.MaxBody {
		e.mu.Lock()
		e.refused++
		e.mu.Unlock()
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		e.openAI(w, p, body)
	case strings.HasSuffix(p, "/responses"):
		e.responses(w, p, body)
	case strings.HasSuffix(p, "/messages"):
		e.anthropic(w, p, body)
	case strings.HasSuffix(p, ":generateContent"), strings.HasSuffix(p, ":streamGenerateContent"):
		e.gemini(w, r, p, body)
	case strings.HasSuffix(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 1})
	default:
		http.Error(w, "not a model API path", http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events: event names (Anthropic) or data only.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) send(event string, v any) {
	var b bytes.Buffer
	if event != "" {
		fmt.Fprintf(&b, "event: %s\n", event)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(&b, "data: %s\n\n", data)
	s.w.Write(b.Bytes())
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s sse) raw(line string) {
	fmt.Fprintf(s.w, "data: %s\n\n", line)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
