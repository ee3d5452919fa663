package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// What the relay forwards of the server's is what it has read: each line
// is read once by wire.Read and the client is given that reading
// re-encoded (a line no strict reader takes is dropped); an answer goes
// to the client only as the answer to a request of the client's it
// matched (its id then the client's own, byte for byte); and a tool
// whose definition two readers read differently is listed without its
// safety hints. The session's stdout filter reads each line first,
// records its ambiguities in the report (and the run log, through
// sandbox.SessionOptions.Ambiguity) and passes it on as it came, cleaned
// (frameGate.passAsRead), so the relay finds them in the line itself.

// lineAmb is where one line the relay read was ambiguous.
type lineAmb struct {
	// whole: outside any one tool's definition (or more places than
	// wire keeps): every tool the line lists counts as ambiguous.
	whole bool
	// tools are the indexes i of result.tools[i] defined ambiguously.
	tools map[int]bool
}

// readingAmb is where r, a message's reading, was ambiguous.
func readingAmb(r wire.Reading) lineAmb {
	var a lineAmb
	if r.All > len(r.Found) {
		a.whole = true
	}
	for _, f := range r.Found {
		if i, ok := pageToolIndex(f.Path); ok {
			if a.tools == nil {
				a.tools = map[int]bool{}
			}
			a.tools[i] = true
			continue
		}
		a.whole = true
	}
	return a
}

// pageToolIndex reads i from a path at or under result.tools[i].
func pageToolIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "result.tools[")
	if !ok {
		return 0, false
	}
	n, after, ok := strings.Cut(rest, "]")
	if !ok || (after != "" && after[0] != '.' && after[0] != '[') {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil && i >= 0
}

// ambNotes keeps the tools the session's filter told were defined
// ambiguously (by name, for the rest of the run): the relay reads each
// line itself, but the filter cleaned what only it saw (a lone
// surrogate, bytes that are not UTF-8), and a tool once defined two ways
// stays suspect.
type ambNotes struct {
	mu    sync.Mutex
	tools map[string]bool
	// all: more tools than maxBookTools were named; every tool is
	// stripped from then on.
	all bool
}

func newAmbNotes() *ambNotes { return &ambNotes{tools: map[string]bool{}} }

func (n *ambNotes) note(a report.Ambiguity) {
	if n == nil || a.Refused {
		return // the line is dropped: the client never reads it
	}
	if a.Tool != "" {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.tools[a.Tool] {
			if len(n.tools) >= maxBookTools {
				n.all = true
				return
			}
			n.tools[a.Tool] = true
		}
		return
	}
	// One outside any tool is the relay's to see in the line itself.
}

// tainted says whether a tool named name was once defined ambiguously.
func (n *ambNotes) tainted(name string) bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.all || n.tools[name]
}

// pendingSet is the client's requests the relay waits to see answered,
// by id: exactly (wire.IDKey), and by the number the TypeScript SDK
// reads an id as (Number(id)), for the answers that give the id in
// another form. At most maxPending are held: past it the oldest is
// forgotten (its answer, should it come, is then dropped).
type pendingSet struct {
	byKey map[string]*pendingReq
	byNum map[float64][]string // numeric keys by value
	seq   uint64
}

// maxPending bounds the client's requests held unanswered.
const maxPending = 4096

func newPendingSet() *pendingSet {
	return &pendingSet{byKey: map[string]*pendingReq{}, byNum: map[float64][]string{}}
}

// pendingKey keys a request's raw id: its exact form, or its bytes for
// a form wire.IDKey does not key (a fraction, an integer past int64),
// which only the same bytes answer.
func pendingKey(id json.RawMessage) string {
	if k := wire.IDKey(id); k != "" {
		return k
	}
	return "raw:" + string(bytes.TrimSpace(id))
}

// add holds req; it returns the request forgotten to make room (nil:
// none).
func (p *pendingSet) add(req *pendingReq) *pendingReq {
	req.key = pendingKey(req.id)
	p.remove(req.key)
	var evicted *pendingReq
	if len(p.byKey) >= maxPending {
		for _, r := range p.byKey {
			if evicted == nil || r.order < evicted.order {
				evicted = r
			}
		}
		p.remove(evicted.key)
	}
	p.seq++
	req.order = p.seq
	p.byKey[req.key] = req
	if v, ok := numericKey(req.key); ok {
		p.byNum[v] = append(p.byNum[v], req.key)
	}
	return evicted
}

func (p *pendingSet) get(key string) *pendingReq { return p.byKey[key] }

func (p *pendingSet) remove(key string) *pendingReq {
	req := p.byKey[key]
	if req == nil {
		return nil
	}
	delete(p.byKey, key)
	if v, ok := numericKey(key); ok {
		ks := p.byNum[v]
		for i, k := range ks {
			if k == key {
				ks = append(ks[:i], ks[i+1:]...)
				break
			}
		}
		if len(ks) == 0 {
			delete(p.byNum, v)
		} else {
			p.byNum[v] = ks
		}
	}
	return req
}

// numericKey is the value of an exact integer key.
func numericKey(key string) (float64, bool) {
	if key == "" || key[0] == '"' || strings.HasPrefix(key, "raw:") {
		return 0, false
	}
	v, err := strconv.ParseFloat(key, 64)
	return v, err == nil
}

// take removes and returns the request an answer's id answers (raw as
// sent, if known; id as read): the one of the same id exactly, or else
// the one numeric id the TypeScript SDK matches it to (Number(id), for
// an id it takes: a string or an integer); loose says it was the latter.
// nil when it answers none, or two.
func (p *pendingSet) take(raw, id json.RawMessage) (req *pendingReq, loose bool) {
	for _, k := range []json.RawMessage{raw, id} {
		if len(k) == 0 {
			continue
		}
		if req := p.remove(pendingKey(k)); req != nil {
			return req, false
		}
	}
	if !tsID(id) {
		return nil, false
	}
	n, ok := wire.JSNumber(id)
	if !ok || math.IsNaN(n) {
		return nil, false
	}
	ks := p.byNum[n]
	if len(ks) != 1 {
		return nil, false
	}
	return p.remove(ks[0]), true
}

// tsID says whether the TypeScript SDK takes id as a message's id: a
// string or an integer (zod's union of string and number().int()).
func tsID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	if id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(id), 64)
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// maxDropsLogged bounds the drop records one by one; the rest are
// counted, in one record at the end.
const maxDropsLogged = 32

// drop logs a message of the server's not passed on.
func (r *relay) drop(id json.RawMessage, why string) {
	n := r.drops.Add(1)
	if n > maxDropsLogged {
		return
	}
	rec := RunRecord{Type: "drop", Reason: why}
	if len(id) > 0 && len(id) <= 64 {
		rec.ID = append(json.RawMessage{}, id...)
	}
	human := "dropped a message of the server's: " + why
	if n == maxDropsLogged {
		human += " (further drops are counted, not logged)"
	}
	r.log.record(rec, human)
}

// dropsSummary logs how many drops went unlogged.
func (r *relay) dropsSummary() {
	if n := r.drops.Load(); n > maxDropsLogged {
		msg := fmt.Sprintf("%d messages of the server's were dropped in all (the first %d logged)", n, maxDropsLogged)
		r.log.record(RunRecord{Type: "drop", Reason: msg}, msg)
	}
}

// maxStripsLogged bounds the records of tools stripped for ambiguity
// (once per tool and reason).
const maxStripsLogged = 1024

// logStripped logs the tools whose hints were stripped whatever the mode,
// the first time for each tool and reason.
func (r *relay) logStripped(ss []stripped) {
	r.mu.Lock()
	var fresh []stripped
	for _, s := range ss {
		k := s.Tool + "\x00" + s.Why
		if r.stripLogged[k] {
			continue
		}
		if len(r.stripLogged) >= maxStripsLogged {
			if !r.stripFull {
				r.stripFull = true
				fresh = append(fresh, stripped{Why: "further tools stripped are not logged one by one"})
			}
			break
		}
		r.stripLogged[k] = true
		fresh = append(fresh, s)
	}
	r.mu.Unlock()
	for _, s := range fresh {
		if s.Tool == "" {
			r.log.record(RunRecord{Type: "hint", Reason: s.Why}, s.Why)
			continue
		}
		r.log.record(RunRecord{Type: "hint", Tool: s.Tool, Reason: "safety hints stripped: " + s.Why},
			fmt.Sprintf("stripped the hints of %s: %s", quoteTool(s.Tool), s.Why))
	}
}
