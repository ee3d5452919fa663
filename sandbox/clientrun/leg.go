package clientrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scriptmodel"
	"github.com/mcpsandbox/mcpsandbox/sandbox/twin"
)

// callMargin is how much longer than the client's bound a control call
// may take: starting it, killing what it left, answering.
const callMargin = 30 * time.Second

// leg runs the client once in a new sandbox, the model asking for tool:
// the self-test, the adapter's files in a fresh HOME, the client, the
// ledger.
func (r *runner) leg(ctx context.Context, name, tool string, trusted bool) (_ *legResult, err error) {
	o := r.opts
	r.logf("leg %s: the model asks for %s (server trusted: %t)", name, tool, trusted)
	res := &legResult{run: clientreport.LegRun{Name: name, Tool: tool, Trusted: trusted, Home: Home,
		Ledger: []json.RawMessage{}, Turns: []json.RawMessage{}, Markers: []string{}, Files: []string{}, Effects: report.NewEffects()},
		self: clientreport.SelfTestLeg{Leg: name, Conns: []string{}, Markers: []string{}}}
	so := o.SessionOptions
	so.Argv, so.Network, so.CallTimeout = []string{agent.Path, twin.HostArg}, sandbox.NetworkNone, o.Timeout+callMargin
	s, err := sandbox.Open(ctx, r.cli, so)
	defer func() {
		if cerr := s.Close(context.WithoutCancel(ctx)); errors.Is(cerr, sandbox.ErrSandboxLost) {
			// What the leg saw is kept, but it is no result.
			err = errors.Join(err, fmt.Errorf("leg %s: %w", name, cerr))
		} else if cerr != nil {
			r.logf("leg %s: closing the sandbox: %v", name, cerr)
		}
		res.run.Problems = append(res.run.Problems, s.Report().Problems...)
	}()
	if err != nil {
		return res, fmt.Errorf("leg %s: starting the twin: %w", name, err)
	}
	seq := 0
	call := func(tool string, in, out any) (report.Effects, error) {
		seq++
		args, err := json.Marshal(in)
		if err != nil {
			return report.Effects{}, err
		}
		c := s.Call(ctx, sandbox.CallRequest{Seq: seq, Tool: tool, Arguments: args})
		eff := s.Mark(ctx, true, seq)
		if c.Error != "" || c.IsError {
			return eff, fmt.Errorf("the twin's %s: %s%s", tool, c.Error, c.Result)
		}
		raw, err := json.Marshal(s.Structured())
		if err != nil {
			return eff, err
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return eff, fmt.Errorf("the twin's %s answered %.200s: %w", tool, raw, err)
		}
		return eff, nil
	}

	// The self-test: the twin calls alpha as a client, over HTTP and the
	// relay, under a nonce of its own.
	selfNonce := nonce()
	var st twin.SelfTestOut
	selfEff, err := call(twin.ToolSelfTest, twin.SelfTestIn{Nonce: selfNonce, Faults: o.Faults}, &st)
	if err != nil {
		return res, fmt.Errorf("leg %s: %w", name, err)
	}
	var led twin.LedgerOut
	if _, err := call(twin.ToolLedger, struct{}{}, &led); err != nil {
		return res, fmt.Errorf("leg %s: %w", name, err)
	}
	res.self.Errors = st.Errors
	for _, c := range st.Conns {
		res.self.Conns = append(res.self.Conns, string(c))
	}
	res.self.Markers = selfTestMarkers(led.Entries, selfEff, selfNonce)
	// The harness's own client reads one way, or the witness is broken.
	if amb, omitted, unread := phaseReading(led, twin.PhaseSelfTest); len(amb) > 0 || omitted > 0 || unread > 0 {
		res.self.Errors = append(res.self.Errors, fmt.Sprintf("the harness's own requests read differently to different readers (%d place(s)) or were not read (%d)", len(amb)+omitted, unread))
	}

	// The client's phase.
	res.run.Nonce = nonce()
	rd, err := r.opts.Adapter.Render(r.vars(), trusted)
	if err != nil {
		return res, err
	}
	prep := twin.PrepareIn{Nonce: res.run.Nonce, Tool: tool, Home: Home}
	for _, f := range rd.Files {
		prep.Files = append(prep.Files, twin.File{Path: f.Path, Content: f.Content})
	}
	var po twin.PrepareOut
	if _, err := call(twin.ToolPrepare, prep, &po); err != nil {
		return res, fmt.Errorf("leg %s: %w", name, err)
	}
	if len(po.Errors) > 0 {
		return res, fmt.Errorf("leg %s: writing the adapter's files: %s", name, strings.Join(po.Errors, "; "))
	}
	res.fresh, res.run.Fresh, res.run.Files = po.Fresh, po.Fresh, po.Written
	// Over the container's environment (the image's PATH and the like).
	env := []string{"HOME=" + Home, "LANG=C.UTF-8", "TERM=dumb"}
	env = append(append(env, o.ClientEnv...), rd.Env...)
	argv := append(slices.Clone(o.Command), rd.Args...)
	res.run.Argv = argv
	var ro twin.RunOut
	runEff, err := call(twin.ToolRun, twin.RunIn{Argv: argv, Env: env, Dir: overlay.Workspace, TimeoutMs: o.Timeout.Milliseconds()}, &ro)
	res.run.Effects = runEff
	if err != nil {
		return res, fmt.Errorf("leg %s: %w", name, err)
	}
	res.run.Exit = clientreport.ClientExit{Started: ro.Started, Code: ro.ExitCode, TimedOut: ro.TimedOut, Error: ro.Error,
		Stdout: ro.Stdout.Text, Stderr: ro.Stderr.Text, StdoutBytes: ro.Stdout.Bytes, StderrBytes: ro.Stderr.Bytes,
		StdoutTruncated: ro.Stdout.Truncated, StderrTruncated: ro.Stderr.Truncated}
	if ro.TimedOut {
		res.run.Problems = append(res.run.Problems, report.Problem{Kind: "timeout", Message: fmt.Sprintf("the client did not end within --timeout %s and was killed with its process group", o.Timeout)})
	}
	if _, err := call(twin.ToolLedger, struct{}{}, &led); err != nil {
		return res, fmt.Errorf("leg %s: %w", name, err)
	}
	if led.TurnsRefused > 0 {
		res.run.Problems = append(res.run.Problems, report.Problem{Kind: "ledger", Message: fmt.Sprintf("%d request(s) to the model were refused (413) for their size, over 8 MiB", led.TurnsRefused)})
	}
	if led.Dropped > 0 || led.TurnsDropped > 0 {
		res.run.Problems = append(res.run.Problems, report.Problem{Kind: "ledger", Message: fmt.Sprintf("the ledger kept %d entries and %d model turns; %d and %d past its bound were counted, not kept", len(led.Entries), len(led.Turns), led.Dropped, led.TurnsDropped)})
	}
	res.run.Observed, res.listings, res.run.Markers = observe(name, tool, res.run.Nonce, led, runEff)
	res.run.Ambiguities, res.run.AmbiguitiesOmitted, res.run.Unread = phaseReading(led, twin.PhaseClient)
	for _, e := range led.Entries {
		if e.Phase == twin.PhaseClient {
			b, _ := json.Marshal(e)
			res.run.Ledger = append(res.run.Ledger, b)
		}
	}
	for _, t := range led.Turns {
		b, _ := json.Marshal(t)
		res.run.Turns = append(res.run.Turns, b)
	}
	return res, nil
}

// markerFiles are the created files in eff under the marker directory,
// by the call number their name carries.
func markerFiles(eff report.Effects) map[int]report.FileChange {
	out := map[int]report.FileChange{}
	for _, f := range eff.Files {
		if f.PathEscaped || path.Dir(f.Path) != twin.MarkerDir || f.Type != "file" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(path.Base(f.Path), "marker-"))
		if err != nil || twin.MarkerPath(n) != f.Path {
			continue
		}
		out[n] = f
	}
	return out
}

// selfTestMarkers are the self-test's markers that both the ledger and
// the disk hold, with its nonce, as "conn:path".
func selfTestMarkers(entries []twin.Entry, eff report.Effects, nonce string) []string {
	files := markerFiles(eff)
	out := []string{}
	for _, e := range entries {
		if e.Phase != twin.PhaseSelfTest || e.Method != "tools/call" || e.Tool != twin.Alpha {
			continue
		}
		if f, ok := files[e.Seq]; ok && f.Path == e.Marker && f.SHA256 == twin.MarkerSHA256(nonce, twin.Alpha, e.Seq) {
			out = append(out, string(e.Conn)+":"+f.Path)
		}
	}
	return out
}

// observe reads a leg's observations from the ledger, the model's turns
// and the client run's file effects. The ledger and the disk are read
// apart: Called from the ledger, Marker from the files, so that a witness
// that disagrees with itself shows. Ambiguous is set when any message of
// the client's read two ways or was not read (see clientverdict).
func observe(leg, tool, nonce string, led twin.LedgerOut, eff report.Effects) (clientreport.Leg, []listing, []string) {
	var o clientreport.Leg
	var lists []listing
	amb, omitted, unread := phaseReading(led, twin.PhaseClient)
	o.Ambiguous = len(amb) > 0 || omitted > 0 || unread > 0
	for _, e := range led.Entries {
		if e.Phase != twin.PhaseClient {
			continue
		}
		o.Contacted = true
		switch e.Method {
		case "tools/list":
			if len(e.Listing) > 0 {
				lists = append(lists, listing{leg: leg, raw: e.Listing})
				if hasBoth(e.Listing) {
					o.Listed = true
				}
			}
		case "tools/call":
			if e.Tool == tool && e.Error == "" {
				o.Called = true
			}
		}
	}
	markers := []string{}
	for n, f := range markerFiles(eff) {
		if f.SHA256 == twin.MarkerSHA256(nonce, tool, n) {
			o.Marker = true
			markers = append(markers, f.Path)
		}
	}
	slices.Sort(markers)
	for _, t := range led.Turns {
		o.ModelContacted = true
		if t.Matched != "" {
			o.Offered = true
		}
		if t.Action == scriptmodel.ActionToolCall {
			o.Asked = true
		}
	}
	return o, lists, markers
}

// phaseReading is what the ledger says of the readings of phase's
// messages: the ambiguities kept, those counted, the messages not read.
func phaseReading(led twin.LedgerOut, phase twin.Phase) ([]report.Ambiguity, int, int) {
	var out []report.Ambiguity
	for _, a := range led.Ambiguities {
		if a.Phase == phase {
			out = append(out, a.Ambiguity)
		}
	}
	return out, led.AmbiguitiesOmitted[phase], led.Unread[phase]
}

// hasBoth says whether a listing holds alpha and beta.
func hasBoth(raw json.RawMessage) bool {
	var tools []map[string]any
	if json.Unmarshal(raw, &tools) != nil {
		return false
	}
	var a, b bool
	for _, t := range tools {
		a = a || t["name"] == twin.Alpha
		b = b || t["name"] == twin.Beta
	}
	return a && b
}

// selfTestCheck holds when every leg's self-test saw both of its calls in
// the ledger and on disk.
func selfTestCheck(legs ...*legResult) clientreport.Check {
	for _, l := range legs {
		if len(l.self.Errors) > 0 {
			return clientreport.Check{Reason: fmt.Sprintf("leg %s: the harness's own calls failed: %s", l.self.Leg, strings.Join(l.self.Errors, "; "))}
		}
		if len(l.self.Markers) != 2 {
			return clientreport.Check{Reason: fmt.Sprintf("leg %s: the harness made 2 calls (HTTP and stdio); the ledger and the disk agree on %d: %v", l.self.Leg, len(l.self.Markers), l.self.Markers)}
		}
	}
	return clientreport.Check{OK: true}
}

// heldFixed checks that the differential moved one variable: every
// listing a client got is the same, holds both tools, and they differ in
// readOnlyHint alone (true on alpha); every leg's HOME was fresh. It
// returns the listing.
func heldFixed(lists []listing, legs ...*legResult) (clientreport.Check, json.RawMessage) {
	for _, l := range legs {
		if !l.fresh {
			return clientreport.Check{Reason: fmt.Sprintf("leg %s: the client's HOME was not a fresh, empty directory", l.run.Name)}, nil
		}
	}
	if len(lists) == 0 {
		return clientreport.Check{Reason: "no client listed the tools"}, nil
	}
	first, err := canonical(lists[0].raw)
	if err != nil {
		return clientreport.Check{Reason: fmt.Sprintf("a listing does not decode: %v", err)}, nil
	}
	for _, l := range lists[1:] {
		c, err := canonical(l.raw)
		if err != nil || !bytes.Equal(c, first) {
			return clientreport.Check{Reason: fmt.Sprintf("the listing changed between calls (leg %s got another): the tools did not stay the same", l.leg)}, first
		}
	}
	if err := oneBoolean(first); err != nil {
		return clientreport.Check{Reason: err.Error()}, first
	}
	return clientreport.Check{OK: true}, first
}

func canonical(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v) // maps marshal with sorted keys
}

// oneBoolean checks that the listing holds alpha and beta, alike but for
// the name and readOnlyHint, true on alpha and false on beta.
func oneBoolean(raw []byte) error {
	var tools []map[string]any
	if err := json.Unmarshal(raw, &tools); err != nil {
		return fmt.Errorf("the listing does not decode: %w", err)
	}
	by := map[string]map[string]any{}
	for _, t := range tools {
		if n, ok := t["name"].(string); ok {
			by[n] = t
		}
	}
	a, b := by[twin.Alpha], by[twin.Beta]
	if a == nil || b == nil {
		return errors.New("the listing does not hold both alpha and beta")
	}
	hint := func(t map[string]any) any {
		ann, _ := t["annotations"].(map[string]any)
		return ann["readOnlyHint"]
	}
	if hint(a) != true || hint(b) != false {
		return fmt.Errorf("readOnlyHint is %v on alpha and %v on beta, not true and false", hint(a), hint(b))
	}
	strip := func(t map[string]any) []byte {
		c := map[string]any{}
		for k, v := range t {
			c[k] = v
		}
		delete(c, "name")
		if ann, ok := t["annotations"].(map[string]any); ok {
			cp := map[string]any{}
			for k, v := range ann {
				cp[k] = v
			}
			delete(cp, "readOnlyHint")
			c["annotations"] = cp
		}
		out, _ := json.Marshal(c)
		return out
	}
	if !bytes.Equal(strip(a), strip(b)) {
		return errors.New("alpha and beta differ in more than readOnlyHint")
	}
	return nil
}
