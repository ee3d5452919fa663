// Package timings records where a run's time goes, step by step, for
// --timings FILE. It is kept out of the report on purpose: times differ
// from run to run, and the report's bytes and fingerprints must not.
//
// A Recorder belongs to one run; each session of the run (the main one,
// a replay's legs, --isolation call's) records on a Track of its own, so
// that sessions running side by side keep their steps apart. A nil
// Recorder or Track records nothing, so that code paths need no check.
package timings

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Step is what a span of time was spent on.
type Step string

// The steps a scan is broken into.
const (
	StepReap      Step = "reap"            // containers left by dead runs removed, at the start
	StepImage     Step = "image"           // the image resolved, the agent's and the workspace's layers looked up or made
	StepStart     Step = "container-start" // created, started, the workspace mounted, the server's exec seen
	StepHandshake Step = "handshake"       // initialize sent and answered
	StepList      Step = "tools/list"      // every page of a listing
	StepCall      Step = "call"            // a planned call (the probe file's, the schema's)
	StepProbe     Step = "probe"           // a boundary probe or a schema negative
	StepSnapshot  Step = "snapshot"        // a mark: the agent's events synced, the upper dir read and compared
	StepWalk      Step = "walk"            // within a snapshot, a walk of the layers (no change journal, or it could not tell)
	StepSettle    Step = "settle"          // the wait while a call's processes still run
	StepLinger    Step = "linger"          // the wait after the last call
	StepWindow    Step = "window"          // a replay's control waiting as long as the call took
	StepQuiet     Step = "quiet"           // a quiet reading asked of the agent and answered
	StepSurfaces  Step = "surfaces"        // prompts and resources listed and read
	StepReplays   Step = "replays"         // the wait for the suspect calls' replays after the sessions, wall time (those begun during a linger ran in it; each replay's legs are sessions of their own)
	StepReplay    Step = "replay"          // one suspect call replayed, both legs, wall time
	StepTeardown  Step = "teardown"        // stdin closed, the container stopped, its changes read, removed
)

// Session names: besides these, "replay N" (call N's replay, its wall
// time), "replay N with" and "replay N control" (its legs), "call N"
// (--isolation call's session for call N).
const (
	SessionScan = "scan" // the scan's own steps, outside any session
	SessionMain = "main" // the main session
)

// Span is one stretch of time.
type Span struct {
	Round   int     `json:"round,omitempty"` // with --rounds, the round's number
	Session string  `json:"session"`
	Step    Step    `json:"step"`
	Call    int     `json:"call,omitempty"` // the call's seq, for a call, a snapshot after it, a replay
	StartMs float64 `json:"startMs"`        // from the run's start
	Ms      float64 `json:"ms"`
}

// Recorder collects the spans of one run.
type Recorder struct {
	*spans
	round int
}

// spans are a run's, every round's.
type spans struct {
	mu    sync.Mutex
	start time.Time
	list  []Span
}

// New returns a recorder whose times count from start.
func New(start time.Time) *Recorder { return &Recorder{spans: &spans{start: start}} }

// Start is when the run began, the spans' zero.
func (r *Recorder) Start() time.Time { return r.start }

// Round is the recorder of round n of the run (--rounds), whose spans go
// with r's.
func (r *Recorder) Round(n int) *Recorder {
	if r == nil {
		return nil
	}
	return &Recorder{spans: r.spans, round: n}
}

// Track is a session's recorder.
func (r *Recorder) Track(session string) *Track {
	if r == nil {
		return nil
	}
	return &Track{r: r.spans, round: r.round, session: session}
}

// Track records the spans of one session.
type Track struct {
	r       *spans
	round   int
	session string
}

// Begin starts a span of step (about call seq, 0 for none); the function
// returned ends it.
func (t *Track) Begin(step Step, call int) func() {
	if t == nil {
		return func() {}
	}
	began := time.Now()
	return func() {
		end := time.Now()
		t.r.mu.Lock()
		defer t.r.mu.Unlock()
		t.r.list = append(t.r.list, Span{Round: t.round, Session: t.session, Step: step, Call: call,
			StartMs: ms(began.Sub(t.r.start)), Ms: ms(end.Sub(began))})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Version is the timings file's format version.
const Version = 1

// File is what --timings writes.
type File struct {
	Version int     `json:"version"`
	WallMs  float64 `json:"wallMs"`
	// Path is the run's wall time by step, on its own path: the scan's
	// steps and its sessions', one after another (the replays count as
	// their wall time, whatever their legs did side by side); Other is
	// the rest (the runner's own work between steps: planning, the
	// verdict, the reports written).
	Path  []Total `json:"path"`
	Other float64 `json:"otherMs"`
	// Sessions are every session's steps, the replays' legs included.
	Sessions []SessionTotals `json:"sessions"`
	Spans    []Span          `json:"spans"`
}

// Total is the time spent on a step: Ms its own (what ran within it, in
// its session, taken off), Share that of the run's wall time.
type Total struct {
	Step  Step    `json:"step"`
	Count int     `json:"count"`
	Ms    float64 `json:"ms"`
	Share float64 `json:"share"`
}

// SessionTotals are one session's steps.
type SessionTotals struct {
	Round   int     `json:"round,omitempty"`
	Session string  `json:"session"`
	Steps   []Total `json:"steps"`
}

// key names a session of a round.
type key struct {
	round   int
	session string
}

// File sums the spans up, for a run that took wall. A step's time is its
// own: a span within another of its session (a snapshot in the
// teardown) is taken off the outer one, so that a session's steps add up
// to its time.
func (r *Recorder) File(wall time.Duration) File {
	r.mu.Lock()
	spans := slices.Clone(r.list)
	r.mu.Unlock()
	// Outer spans first: by start, the longer first.
	slices.SortStableFunc(spans, func(a, b Span) int {
		return cmp.Or(cmp.Compare(a.StartMs, b.StartMs), cmp.Compare(b.Ms, a.Ms))
	})
	f := File{Version: Version, WallMs: ms(wall), Spans: spans}
	own := make([]float64, len(spans))
	open := map[key][]int{} // per session, the spans that hold the next one
	for i, s := range spans {
		own[i] = s.Ms
		k := key{s.Round, s.Session}
		st := open[k]
		for len(st) > 0 && spans[st[len(st)-1]].StartMs+spans[st[len(st)-1]].Ms <= s.StartMs {
			st = st[:len(st)-1]
		}
		if len(st) > 0 {
			own[st[len(st)-1]] -= s.Ms
		}
		open[k] = append(st, i)
	}
	var order []key
	by := map[key]map[Step]*Total{}
	for i, s := range spans {
		k := key{s.Round, s.Session}
		if by[k] == nil {
			by[k] = map[Step]*Total{}
			order = append(order, k)
		}
		add(by[k], Total{Step: s.Step, Count: 1, Ms: max(own[i], 0)})
	}
	path := map[Step]*Total{}
	f.Other = f.WallMs
	for _, k := range order {
		steps := by[k]
		f.Sessions = append(f.Sessions, SessionTotals{Round: k.round, Session: k.session, Steps: f.sorted(steps)})
		if strings.HasPrefix(k.session, "replay ") {
			continue // within the scan's replay steps
		}
		for _, t := range steps {
			add(path, *t)
			f.Other -= t.Ms
		}
	}
	f.Path = f.sorted(path)
	f.Other = round(max(f.Other, 0))
	return f
}

// add adds t to m's total of its step.
func add(m map[Step]*Total, t Total) {
	if m[t.Step] == nil {
		m[t.Step] = &Total{Step: t.Step}
	}
	m[t.Step].Count += t.Count
	m[t.Step].Ms += t.Ms
}

// sorted are m's totals, rounded, the largest first.
func (f File) sorted(m map[Step]*Total) []Total {
	out := make([]Total, 0, len(m))
	for _, t := range m {
		v := Total{Step: t.Step, Count: t.Count, Ms: round(t.Ms)}
		if f.WallMs > 0 {
			v.Share = round(t.Ms / f.WallMs)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Total) int { return cmp.Or(cmp.Compare(b.Ms, a.Ms), cmp.Compare(a.Step, b.Step)) })
	return out
}

func round(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// Write writes the file for a run that took wall, indented JSON.
func (r *Recorder) Write(w io.Writer, wall time.Duration) error {
	if r == nil {
		return nil
	}
	b, err := json.MarshalIndent(r.File(wall), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the timings: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the timings: %w", err)
	}
	return nil
}
