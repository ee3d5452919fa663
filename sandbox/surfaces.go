package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// MaxReadsPerSurface bounds the resources, the resource templates, the
// prompts and the completions read, each: the first ones in a fixed order
// (by URI, URI template, name). A server's resources may be a whole file
// tree; the ones past the bound are counted in a "surfaces" problem.
const MaxReadsPerSurface = 20

// phaseBeforeReads is the phase that closes what happened between the
// end of the tool calls and the first read (kept only when something
// did).
const phaseBeforeReads = "before-reads"

// surfaceCaps are the capabilities initialize declared that have reads.
type surfaceCaps struct{ resources, prompts, completions bool }

// declaredSurfaces reads the capabilities the server declared; only those
// are asked about.
func declaredSurfaces(raw json.RawMessage) surfaceCaps {
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil {
		return surfaceCaps{}
	}
	has := func(k string) bool { v, ok := caps[k]; return ok && string(v) != "null" }
	return surfaceCaps{resources: has("resources"), prompts: has("prompts"), completions: has("completions")}
}

// Surfaces reads every surface besides the tools that the server
// declared, once its tools were called: resources (listed, read),
// resource templates (listed, read with variables made like a tool's
// arguments from canary), prompts (listed, got with arguments made from
// their argument lists), and completions of the prompts' and templates'
// first argument. Each read is a report.Read with its effects. It returns
// why the reads ended early ("" when they did not); interrupted says that
// ctx ended them, which only the caller can say why (its problem is the
// caller's).
func (s *Session) Surfaces(ctx context.Context, canary probes.Canary) (ended string, interrupted bool) {
	r := surfaceReader{s: s, ctx: ctx}
	ended = r.all(canary)
	return ended, r.interrupted
}

// surfaceReader makes one Surfaces' reads.
type surfaceReader struct {
	s   *Session
	ctx context.Context
	// interrupted is set once ctx ended a read.
	interrupted bool
}

// all makes the reads of surfaces; it returns why they ended early, if
// they did.
func (sr *surfaceReader) all(canary probes.Canary) (ended string) {
	s := sr.s
	caps := declaredSurfaces(s.rep.Server.Capabilities)
	if !caps.resources && !caps.prompts {
		return "" // completion is about prompts and templates
	}
	if eff := s.Mark(sr.ctx, false, 0); !eff.Empty() {
		s.rep.Phases = append(s.rep.Phases, report.Phase{Name: phaseBeforeReads, Effects: eff})
	}
	var completions []completion
	if caps.resources {
		res := listSurface(sr.ctx, s, "resources/list", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			r, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		})
		uris := make([]string, 0, len(res))
		for _, r := range res {
			if r != nil {
				uris = append(uris, r.URI)
			}
		}
		slices.Sort(uris)
		uris = slices.Compact(uris)
		for _, uri := range s.bounded("resources", uris) {
			if ended = sr.readResource(report.SurfaceResource, uri, uri, nil); ended != "" {
				return ended
			}
		}
		tpls := listSurface(sr.ctx, s, "resources/templates/list", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		})
		var names []string
		for _, t := range tpls {
			if t != nil {
				names = append(names, t.URITemplate)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
		for _, tpl := range s.bounded("resource templates", names) {
			vars := templateVars(tpl)
			vals := synthStrings(canary, tpl, vars, nil)
			args, _ := json.Marshal(vals)
			if ended = sr.readResource(report.SurfaceTemplate, tpl, expandTemplate(tpl, vals), args); ended != "" {
				return ended
			}
			if len(vars) > 0 {
				completions = append(completions, completion{ref: &mcp.CompleteReference{Type: "ref/resource", URI: tpl}, target: tpl, arg: vars[0]})
			}
		}
	}
	if caps.prompts {
		ps := listSurface(sr.ctx, s, "prompts/list", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
			r, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Prompts, r.NextCursor, nil
		})
		byName := map[string]*mcp.Prompt{}
		var names []string
		for _, p := range ps {
			if p != nil && byName[p.Name] == nil {
				byName[p.Name] = p
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		for _, name := range s.bounded("prompts", names) {
			p := byName[name]
			var argNames []string
			required := map[string]bool{}
			desc := map[string]string{}
			for _, a := range p.Arguments {
				if a != nil && !slices.Contains(argNames, a.Name) {
					argNames = append(argNames, a.Name)
					required[a.Name], desc[a.Name] = a.Required, a.Description
				}
			}
			vals := synthStrings(canary, name, argNames, desc)
			args, _ := json.Marshal(vals)
			rd := report.Read{Surface: report.SurfacePrompt, Method: "prompts/get", Target: name, Arguments: args}
			if ended = sr.read(rd, func(ctx context.Context) (any, string, error) {
				r, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: vals})
				if err != nil {
					return nil, "", err
				}
				return r, promptText(r), nil
			}); ended != "" {
				return ended
			}
			if len(argNames) > 0 {
				completions = append(completions, completion{ref: &mcp.CompleteReference{Type: "ref/prompt", Name: name}, target: name, arg: argNames[0]})
			}
		}
	}
	if !caps.completions {
		return ""
	}
	for _, c := range completions[:min(len(completions), MaxReadsPerSurface)] {
		args, _ := json.Marshal(map[string]string{"name": c.arg, "value": ""})
		rd := report.Read{Surface: report.SurfaceCompletion, Method: "completion/complete", Target: c.target, Arguments: args}
		if ended = sr.read(rd, func(ctx context.Context) (any, string, error) {
			r, err := s.cs.Complete(ctx, &mcp.CompleteParams{Ref: c.ref, Argument: mcp.CompleteParamsArgument{Name: c.arg}})
			if err != nil {
				return nil, "", err
			}
			return r, strings.Join(r.Completion.Values, "\n"), nil
		}); ended != "" {
			return ended
		}
	}
	if n := len(completions) - MaxReadsPerSurface; n > 0 {
		s.Problem("surfaces", 0, "%d completion(s) past the first %d were not asked", n, MaxReadsPerSurface)
	}
	return ""
}

// completion is a completion/complete to ask: of ref's argument arg.
type completion struct {
	ref    *mcp.CompleteReference
	target string
	arg    string
}

// bounded is the first MaxReadsPerSurface of names; the rest are a
// problem.
func (s *Session) bounded(what string, names []string) []string {
	if n := len(names) - MaxReadsPerSurface; n > 0 {
		s.Problem("surfaces", 0, "the server lists %d %s; the first %d (in order) were read, %d were not", len(names), what, MaxReadsPerSurface, n)
		return names[:MaxReadsPerSurface]
	}
	return names
}

// readResource reads uri (target is the resource's URI or the template's).
func (sr *surfaceReader) readResource(surface, target, uri string, args json.RawMessage) string {
	rd := report.Read{Surface: surface, Method: "resources/read", Target: target, URI: uri, Arguments: args}
	return sr.read(rd, func(ctx context.Context) (any, string, error) {
		r, err := sr.s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, "", err
		}
		return r, resourceText(r), nil
	})
}

// read makes one read and records it with its effects; it returns why
// the reads cannot go on ("" when they can): the run ended, the
// connection is gone, or the server no longer answers even a ping.
func (sr *surfaceReader) read(rd report.Read, do func(ctx context.Context) (any, string, error)) string {
	s := sr.s
	if sr.ctx.Err() != nil {
		sr.interrupted = true
		return "interrupted"
	}
	rd.Seq = len(s.rep.Reads) + 1
	rd.Effects = report.NewEffects()
	s.logf("read %d: %s %s", rd.Seq, rd.Method, rd.Target)
	cctx, cancel := context.WithTimeout(sr.ctx, s.opts.CallTimeout)
	defer cancel() // classified below by whether it ran out
	start := time.Now()
	v, text, err := do(cctx)
	rd.DurationMs = time.Since(start).Milliseconds()
	whole, refused := s.gate.take(rd.Method)
	var rpcErr *jsonrpc.Error
	ended := ""
	switch {
	case refused != nil:
		rd.Error, rd.ErrorKind = "the client refused the result: "+refused.String(), "client"
		rd.ResultBytes, rd.ResultSha256 = refused.Result.Bytes, refused.Result.Sha256
		s.Problem(ProblemProtocolBound, 0, "the answer to read %d (%s %s): %s", rd.Seq, rd.Method, s.clip(rd.Target), refused)
	case err == nil:
		rd.Result = boundText(text, s.opts.Bounds.MaxResultText)
		rd.WholeBytes, rd.WholeSha256 = whole.Bytes, whole.Sha256
		if whole.Bytes > int64(s.opts.Bounds.MaxResultText) {
			rd.ResultBytes, rd.ResultSha256 = whole.Bytes, whole.Sha256
		}
		rd.Disclosed = s.disclosed(v)
	case errors.As(err, &rpcErr):
		rd.Error, rd.ErrorKind = fmt.Sprintf("JSON-RPC error %d: %s", rpcErr.Code, s.clip(rpcErr.Message)), "rpc"
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && sr.ctx.Err() == nil:
		rd.Error, rd.ErrorKind = fmt.Sprintf("no result within --call-timeout %s", s.opts.CallTimeout), "timeout"
		s.Problem("timeout", 0, "read %d (%s %s): %s", rd.Seq, rd.Method, s.clip(rd.Target), rd.Error)
		// One stuck handler is the resource's; a server that answers
		// nothing would cost a timeout per read left.
		if perr := s.Ping(sr.ctx, 3*time.Second); perr != nil && sr.ctx.Err() == nil {
			ended = fmt.Sprintf("the server stopped answering after read %d (not even ping)", rd.Seq)
			s.Problem("unresponsive", 0, "%s", ended)
		}
	case sr.ctx.Err() != nil:
		rd.Error, rd.ErrorKind = "the run ended during the read: "+context.Cause(sr.ctx).Error(), "interrupted"
		sr.interrupted, ended = true, "interrupted"
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe):
		rd.Error, rd.ErrorKind = s.clip(err.Error()), "transport"
		ended = fmt.Sprintf("the server closed the connection during read %d (%s %s)", rd.Seq, rd.Method, s.clip(rd.Target))
		if st, exited := s.Exited(sr.ctx); exited {
			ended = fmt.Sprintf("the server exited with code %d during read %d (%s %s)", st.ExitCode, rd.Seq, rd.Method, s.clip(rd.Target))
		}
		s.Problem("crash", 0, "%s", ended)
	default:
		rd.Error, rd.ErrorKind = s.clip(err.Error()), "client"
	}
	rd.Effects = s.Mark(sr.ctx, true, 0)
	s.rep.Reads = append(s.rep.Reads, rd)
	return ended
}

// listSurface follows nextCursor through a list method's pages, within
// the tool list's bounds (pages, bytes, items); a bound hit, a failed
// page or a repeated cursor ends the list there, with a problem.
func listSurface[T any](ctx context.Context, s *Session, method string, page func(ctx context.Context, cursor string) ([]T, string, error)) []T {
	b := s.opts.Bounds
	var items []T
	seen := map[string]bool{}
	cursor, cut := "", ""
	bound := false // cut at a bound, not by a failure
	size := int64(0)
	for pages := 0; ; pages++ {
		if pages >= b.MaxToolPages {
			cut = fmt.Sprintf("more than %d pages (the page bound)", b.MaxToolPages)
			bound = true
			break
		}
		lctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
		got, next, err := page(lctx, cursor)
		cancel()
		d, r := s.gate.take(method)
		if r != nil {
			cut = fmt.Sprintf("page %d: %s", pages+1, r)
			bound = true
			break
		}
		if err != nil {
			cut = fmt.Sprintf("page %d failed: %s", pages+1, s.clip(err.Error()))
			break
		}
		if size += d.Bytes; size > int64(b.MaxToolListBytes) {
			cut = fmt.Sprintf("the results passed %d bytes in all (the tool list bound) at page %d, which was not kept", b.MaxToolListBytes, pages+1)
			bound = true
			break
		}
		items = append(items, got...)
		if len(items) > b.MaxTools {
			items = items[:b.MaxTools]
			cut = fmt.Sprintf("more than %d items (the tool bound)", b.MaxTools)
			bound = true
			break
		}
		if next == "" {
			break
		}
		if seen[next] {
			cut = fmt.Sprintf("the server repeats cursor %q", s.clip(next))
			break
		}
		seen[next], cursor = true, next
	}
	if cut != "" {
		kind := "surfaces"
		if bound {
			kind = ProblemProtocolBound
			s.rep.Server.SurfacesTruncated = append(s.rep.Server.SurfacesTruncated, method)
		}
		s.Problem(kind, 0, "%s was cut: %s; the %d item(s) listed before are kept", method, cut, len(items))
	}
	return items
}

// templateVars are the variables of an RFC 6570 URI template, in order,
// each once.
func templateVars(tpl string) []string {
	var out []string
	for _, expr := range templateExprs(tpl) {
		_, names := splitExpr(expr)
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// templateExprs are the {expressions} of tpl, without braces.
func templateExprs(tpl string) []string {
	var out []string
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, tpl[i+1:i+j])
		tpl = tpl[i+j+1:]
	}
}

// splitExpr is an expression's operator (0 for none) and its variables'
// names, without their modifiers (":3", "*").
func splitExpr(expr string) (byte, []string) {
	var op byte
	if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
		op, expr = expr[0], expr[1:]
	}
	var names []string
	for _, v := range strings.Split(expr, ",") {
		v, _, _ = strings.Cut(v, ":")
		if v = strings.TrimSuffix(v, "*"); v != "" {
			names = append(names, v)
		}
	}
	return op, names
}

// expandTemplate fills tpl's variables with vals (RFC 6570, level 3).
func expandTemplate(tpl string, vals map[string]string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(tpl[i:], '}')
		}
		if i < 0 || j < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		b.WriteString(tpl[:i])
		op, names := splitExpr(tpl[i+1 : i+j])
		tpl = tpl[i+j+1:]
		esc := func(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }
		if op == '+' || op == '#' {
			esc = func(v string) string { return (&url.URL{Path: v}).EscapedPath() }
		}
		first, sep, named := "", ",", false
		switch op {
		case '#':
			first = "#"
		case '.':
			first, sep = ".", "."
		case '/':
			first, sep = "/", "/"
		case ';':
			first, sep, named = ";", ";", true
		case '?':
			first, sep, named = "?", "&", true
		case '&':
			first, sep, named = "&", "&", true
		}
		for k, n := range names {
			if k == 0 {
				b.WriteString(first)
			} else {
				b.WriteString(sep)
			}
			if named {
				b.WriteString(n + "=")
			}
			b.WriteString(esc(vals[n]))
		}
	}
}

// synthStrings makes a value for each name as a tool's argument of that
// name would get (a path-like one points into the canary project): the
// synthesizer's, from a schema of string properties, all required.
func synthStrings(c probes.Canary, owner string, names []string, desc map[string]string) map[string]string {
	out := map[string]string{}
	if len(names) == 0 {
		return out
	}
	props := map[string]any{}
	for _, n := range names {
		p := map[string]any{"type": "string"}
		if d := desc[n]; d != "" {
			p["description"] = d
		}
		props[n] = p
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": names})
	var got map[string]any
	if raw, err := probes.SynthesizeIn(c, owner, schema); err == nil {
		json.Unmarshal(raw, &got)
	}
	for _, n := range names {
		if v, ok := got[n].(string); ok && v != "" {
			out[n] = v
		} else {
			out[n] = "example"
		}
	}
	return out
}

// resourceText is the text of a resource read: each content's text, or
// what a blob is.
func resourceText(r *mcp.ReadResourceResult) string {
	var parts []string
	for _, c := range r.Contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			parts = append(parts, fmt.Sprintf("[blob %s, %d bytes]", c.MIMEType, len(c.Blob)))
			continue
		}
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// promptText is the text of a prompt's messages, each after its role.
func promptText(r *mcp.GetPromptResult) string {
	var parts []string
	for _, m := range r.Messages {
		if m == nil {
			continue
		}
		text := fmt.Sprintf("[%T]", m.Content)
		if t, ok := m.Content.(*mcp.TextContent); ok {
			text = t.Text
		}
		parts = append(parts, string(m.Role)+": "+text)
	}
	return strings.Join(parts, "\n")
}

// boundText cuts s at limit bytes (not inside a character), as a call's
// result text is cut.
func boundText(s string, limit int) string {
	if len(s) > limit {
		cut := limit
		for cut > max(limit-4, 0) && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return report.EscapeInvalid(s)
}
