package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// What the server asks of the client, and tells it, on its own: each
// request (sampling, elicitation, roots, any other) and each logging
// message is logged with the call in flight, and the policy's run.requests
// can refuse a kind; the user's answers to an elicitation are watched as
// honeytokens; a message that speaks as mcpsandbox is marked as the
// server's.

// inFlight names the calls in flight, for a record: the latest's seq and
// tool (0, "": none).
func (r *relay) inFlight() (int, string) {
	cs := r.calls.unanswered()
	if len(cs) == 0 {
		return 0, ""
	}
	c := cs[len(cs)-1]
	return c.Seq, c.Tool
}

// during says where a message of the server's came, for a human line.
func during(seq int, tool string) string {
	if seq == 0 {
		return "outside any call"
	}
	return fmt.Sprintf("during call %d %s", seq, quoteTool(tool))
}

// noteAsk logs a message of the server's to the client (kind request or
// notification), the first maxAsksLogged of each method; the rest are
// counted at the end.
func (r *relay) noteAsk(kind, method string, id json.RawMessage, size int, refused bool) {
	r.mu.Lock()
	if _, known := r.asked[method]; !known && len(r.asked) >= maxAskMethods {
		r.askedOther++
		r.mu.Unlock()
		return
	}
	r.asked[method]++
	n := r.asked[method]
	r.mu.Unlock()
	if n > maxAsksLogged {
		return
	}
	seq, tool := r.inFlight()
	verb := "asks the client"
	if kind == "notification" {
		verb = "tells the client"
	}
	human := fmt.Sprintf("%s, the server %s: %s (%d bytes)", during(seq, tool), verb, report.OneLine(method), size)
	if refused {
		human += ", refused by policy"
	}
	switch {
	case n == maxAsksShown:
		human += fmt.Sprintf(" (further %s are in the log only)", report.OneLine(method))
	case n > maxAsksShown:
		human = ""
	}
	if n == maxAsksLogged {
		human = fmt.Sprintf("further %s are counted, not logged", report.OneLine(method))
	}
	r.log.record(RunRecord{Type: kind, Seq: seq, Tool: tool, Method: method, ID: id, Bytes: size, Refused: refused}, human)
}

// serverAsks logs a request of the server's and, when the policy refuses
// its kind, answers it in the client's place (true: not passed on).
func (r *relay) serverAsks(line []byte, h head, method string) bool {
	refused := r.opts.Verdict.Policy.Run.RequestAction(method) == rules.ActionDeny
	r.noteAsk("request", method, h.ID, len(line), refused)
	if !refused {
		return false
	}
	body, _ := json.Marshal(map[string]any{"code": RunDeniedCode, "message": fmt.Sprintf("mcpsandbox: %s is refused by policy (run.requests): the client was not asked", method)})
	r.toServer(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", bytes.TrimSpace(h.ID), body))
	return true
}

// serverTells logs a notification of the server's (not its progress),
// marks one that speaks as mcpsandbox as the server's, and says whether
// it is passed on (the policy may refuse its kind).
func (r *relay) serverTells(line []byte, h head, method string) ([]byte, bool) {
	refused := r.opts.Verdict.Policy.Run.RequestAction(method) == rules.ActionDeny
	if method != "notifications/progress" || refused {
		r.noteAsk("notification", method, nil, len(line), refused)
	}
	if refused {
		return nil, false
	}
	if !bytes.Contains(bytes.ToLower(h.Params), []byte("mcpsandbox")) {
		return line, true
	}
	out, did := marked(line, h.Params, method)
	if did {
		seq, tool := r.inFlight()
		r.log.record(RunRecord{Type: "impersonation", Seq: seq, Tool: tool, Method: method},
			fmt.Sprintf("%s, the server sent %s in mcpsandbox's name: passed on marked as the server's", during(seq, tool), report.OneLine(method)))
	}
	return out, true
}

// serverMark is what a message of the server's that speaks as
// mcpsandbox begins with, as the client shows it.
const serverMark = "[the server says, not mcpsandbox] "

// marked is a notification's line with the text that names mcpsandbox
// marked as the server's: a logging message's logger and data, a
// progress message.
func marked(line []byte, params json.RawMessage, method string) ([]byte, bool) {
	p, err := wire.ParseObject(params)
	if err != nil {
		return line, false
	}
	did := false
	for _, key := range []string{"data", "message", "logger"} {
		v, ok := p.Get(key)
		if !ok {
			continue
		}
		var s string
		if wire.Unmarshal(v, &s) == nil {
			if strings.Contains(strings.ToLower(s), "mcpsandbox") {
				b, _ := json.Marshal(serverMark + s)
				p, did = p.Set(key, b), true
			}
			continue
		}
		if key == "data" && bytes.Contains(bytes.ToLower(v), []byte("mcpsandbox")) {
			// Structured data: wrapped, so that no client shows it as
			// mcpsandbox's.
			b, _ := json.Marshal(map[string]json.RawMessage{"fromTheServerNotMcpsandbox": v})
			p, did = p.Set(key, b), true
		}
	}
	if method == "notifications/message" && did {
		b, _ := json.Marshal("server")
		p = p.Set("logger", b)
	}
	if !did {
		return line, false
	}
	out, err := wire.ReplaceMember(line, "params", p.Encode())
	if err != nil {
		return line, false
	}
	return out, true
}

// elicited watches the values of an answer that reads as an accepted
// elicitation's (action "accept", with content); any other is left.
func (r *relay) elicited(result json.RawMessage) {
	if r.opts.Watch == nil {
		return
	}
	var res struct {
		Action  string `json:"action"`
		Content any    `json:"content"`
	}
	if wire.Unmarshal(result, &res) != nil || res.Action != "accept" {
		return
	}
	if _, ok := res.Content.(map[string]any); !ok {
		return
	}
	r.mu.Lock()
	names, short, full := r.opts.Watch.elicited(res.Content, &r.elicits)
	r.mu.Unlock()
	if len(names) == 0 && short == 0 && full == 0 {
		return
	}
	msg := fmt.Sprintf("the user's answer to an elicitation: %d value(s) watched as honeytokens (%s)", len(names), strings.Join(names, ", "))
	if short > 0 {
		msg += fmt.Sprintf("; %d shorter than %d bytes, not watched", short, minSecret)
	}
	if full > 0 {
		msg += fmt.Sprintf("; %d not watched: %d values are watched already (the bound)", full, maxWatched)
	}
	r.log.record(RunRecord{Type: "watch", Message: msg}, msg)
}

// inputRequests logs the requests a call's result asks the client to
// answer (protocol 2026-07-28 on: the client retries the call with the
// answers), as serverAsks logs them in the earlier protocol; a kind the
// policy refuses ends the call with an error in the result's place.
func (r *relay) inputRequests(line []byte, h head) []byte {
	var res struct {
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
	}
	if wire.Unmarshal(h.Result, &res) != nil {
		return line
	}
	ids := make([]string, 0, len(res.InputRequests))
	for id := range res.InputRequests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var refused []string
	for _, id := range ids {
		m := res.InputRequests[id].Method
		deny := r.opts.Verdict.Policy.Run.RequestAction(m) == rules.ActionDeny
		r.noteAsk("request", m, nil, len(line), deny)
		if deny {
			refused = append(refused, m)
		}
	}
	if len(refused) == 0 {
		return line
	}
	body, _ := json.Marshal(map[string]any{"code": RunDeniedCode, "message": fmt.Sprintf("mcpsandbox: the call asks the client for %s, refused by policy (run.requests)", strings.Join(refused, ", "))})
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", bytes.TrimSpace(h.ID), body)
}

// inputResponses watches the client's answers to elicitations among a
// retried call's inputResponses. An answer is known by its shape (an
// action and content), not by remembering which request asked for it:
// a server cannot fill a table of its requests to have an answer go
// unwatched.
func (r *relay) inputResponses(params json.RawMessage) {
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if wire.Unmarshal(params, &p) != nil {
		return
	}
	ids := make([]string, 0, len(p.InputResponses))
	for id := range p.InputResponses {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.elicited(p.InputResponses[id])
	}
}

// asksSummary says, at the end, how many messages of each method the
// server sent the client past those logged, and of methods past the
// bound on methods: what was counted, not logged, is said.
func (r *relay) asksSummary() {
	r.mu.Lock()
	var methods []string
	for m, n := range r.asked {
		if n > maxAsksLogged {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	counts := make([]int, len(methods))
	for i, m := range methods {
		counts[i] = r.asked[m]
	}
	other := r.askedOther
	r.mu.Unlock()
	for i, m := range methods {
		msg := fmt.Sprintf("the server sent the client %d %s in all (the first %d logged)", counts[i], report.OneLine(m), maxAsksLogged)
		r.log.record(RunRecord{Type: "problem", Reason: "asks-bound", Method: m, Message: msg}, "asks-bound: "+msg)
	}
	if other > 0 {
		msg := fmt.Sprintf("the server sent the client %d message(s) of methods past the first %d, none logged", other, maxAskMethods)
		r.log.record(RunRecord{Type: "problem", Reason: "asks-bound", Message: msg}, "asks-bound: "+msg)
	}
}

// maxAsksLogged bounds the records of one method the server sends the
// client; maxAskMethods the methods logged.
const (
	maxAsksLogged = 256
	maxAskMethods = 64
	// maxAsksShown of each method are on stderr too.
	maxAsksShown = 8
)
