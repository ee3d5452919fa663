package readers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire/readers"
)

// The Go readers run in the test's process. Each returns a cell for
// every probe, and "_detail" with the error it met, if any.
var goReaders = []struct {
	name string
	read func(line []byte, probes []string) map[string]string
}{
	{"go-encoding-json", readEncodingJSON},
	{"go-sdk", readGoSDK},
	{"mcpsandbox", readMcpsandbox},
}

// Shaped like mcp-go's types (mcp-go is not a dependency): the envelope
// with the result kept raw, then the result decoded into structs, each
// with std encoding/json, as mcp-go's stdio client does line by line.
type goEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

type goListToolsResult struct {
	Tools      []goTool `json:"tools"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

type goTool struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	InputSchema goInputSchema `json:"inputSchema"`
	Annotations goAnnotations `json:"annotations"`
}

type goInputSchema struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties,omitempty"`
	Required   []string       `json:"required,omitempty"`
}

type goAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

func goErrStage(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return "parse"
	}
	return "type"
}

func readEncodingJSON(line []byte, probes []string) map[string]string {
	out := map[string]string{}
	var env goEnvelope
	if err := json.Unmarshal(line, &env); err != nil {
		fill(out, probes, "error: "+goErrStage(err), "0")
		out["_detail"] = short(err)
		return out
	}
	var res goListToolsResult
	resErr := json.Unmarshal(env.Result, &res)
	if resErr != nil {
		out["_detail"] = short(resErr)
	}
	for _, p := range probes {
		switch path := parsePath(p); {
		case p == readers.PMessages:
			out[p] = "1"
		case p == readers.PMatched:
			out[p] = "n/a"
		case path[0] == "result" && resErr != nil:
			out[p] = "error: " + goErrStage(resErr)
		case path[0] == "result":
			out[p] = probe(reflect.ValueOf(res), path[1:])
		default:
			out[p] = probe(reflect.ValueOf(env), path)
		}
	}
	return out
}

// readGoSDK reads the line as a go-sdk client does: the SDK's stdio
// framing and message decoding (mcp.IOTransport), the id matched as its
// connection matches an answer to a call (the jsonrpc.ID of the call is
// the map key), then the result handed to a real mcp.Client's
// ListTools, which decodes it into mcp.ListToolsResult and filters it.
func readGoSDK(line []byte, probes []string) map[string]string {
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	framed := append(append([]byte{}, line...), '\n')
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(bytes.NewReader(framed)), Writer: nopWriteCloser{}}).Connect(ctx)
	if err != nil {
		panic(err)
	}
	var msgs []jsonrpc.Message
	var readErr error
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
		msgs = append(msgs, m)
	}
	conn.Close()
	var details []string
	if readErr != nil {
		details = append(details, "read: "+short(readErr))
	}
	var resp *jsonrpc.Response
	if len(msgs) > 0 {
		resp, _ = msgs[0].(*jsonrpc.Response)
	}
	want, _ := jsonrpc.MakeID(float64(readers.RequestID))
	matched := resp != nil && resp.ID == want
	var res *mcp.ListToolsResult
	var listErr error
	if matched {
		res, listErr = listTools(ctx, resp)
		if listErr != nil {
			details = append(details, "ListTools: "+short(listErr))
		}
	}
	for _, p := range probes {
		switch path := parsePath(p); {
		case p == readers.PMessages:
			out[p] = strconv.Itoa(len(msgs))
		case resp == nil:
			out[p] = "error: " + sdkStage(readErr)
		case p == readers.PMatched:
			out[p] = yesNo(matched)
		case path[0] == "id":
			out[p] = renderAny(resp.ID.Raw())
		case !matched:
			out[p] = "unmatched"
		case listErr != nil:
			out[p] = "error: result"
		default:
			out[p] = probe(reflect.ValueOf(res), path[1:])
		}
	}
	if len(details) > 0 {
		out["_detail"] = strings.Join(details, "; ")
	}
	return out
}

// sdkStage names where the go-sdk stopped reading a line: its JSON
// framing (a syntax error, trailing data) or the message's decoding.
func sdkStage(err error) string {
	var syn *json.SyntaxError
	if err == nil || errors.As(err, &syn) || strings.Contains(err.Error(), "trailing data") {
		return "parse"
	}
	return "envelope"
}

// listTools runs a go-sdk client over a connection that answers its
// initialize, and its tools/list with resp's result.
func listTools(ctx context.Context, resp *jsonrpc.Response) (*mcp.ListToolsResult, error) {
	init, err := json.Marshal(&mcp.InitializeResult{ProtocolVersion: "2025-11-25",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		ServerInfo:   &mcp.Implementation{Name: "readers", Version: "0"}})
	if err != nil {
		return nil, err
	}
	conn := &fakeConn{in: make(chan jsonrpc.Message, 4), done: make(chan struct{}), answer: func(req *jsonrpc.Request) jsonrpc.Message {
		switch req.Method {
		case "initialize":
			return &jsonrpc.Response{ID: req.ID, Result: init}
		case "tools/list":
			return &jsonrpc.Response{ID: req.ID, Result: resp.Result, Error: resp.Error}
		}
		return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: req.Method}}
	}}
	client := mcp.NewClient(&mcp.Implementation{Name: "readers", Version: "0"}, &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	cs, err := client.Connect(ctx, fakeTransport{conn}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	defer cs.Close()
	return cs.ListTools(ctx, nil)
}

type fakeTransport struct{ conn *fakeConn }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

type fakeConn struct {
	in     chan jsonrpc.Message
	done   chan struct{}
	once   sync.Once
	answer func(*jsonrpc.Request) jsonrpc.Message
}

func (c *fakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
		select {
		case c.in <- c.answer(req):
		case <-c.done:
			return io.EOF
		}
	}
	return nil
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *fakeConn) SessionID() string { return "" }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// readMcpsandbox reads the line as mcpsandbox's judge does: wire's strict
// reading, then its canonical form decoded case-sensitively
// (wire.Unmarshal) into the go-sdk's types; the id matched as `mcpsandbox
// run` matches an answer to a request (sandbox/ambiguity.go): its exact
// form (wire.IDKey), or Number(id) as the TypeScript SDK matches
// (wire.JSNumber).
func readMcpsandbox(line []byte, probes []string) map[string]string {
	out := map[string]string{}
	r, err := wire.Read(line)
	if err != nil {
		fill(out, probes, "error: refused", "0")
		out["_detail"] = short(err)
		return out
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := wire.Unmarshal(r.Canonical, &env); err != nil {
		fill(out, probes, "error: type", "1")
		out["_detail"] = short(err)
		return out
	}
	var res mcp.ListToolsResult
	resErr := wire.Unmarshal(env.Result, &res)
	if resErr != nil {
		out["_detail"] = short(resErr)
	}
	n, isNumber := wire.JSNumber(env.ID)
	matched := wire.IDKey(env.ID) == strconv.Itoa(readers.RequestID) || (isNumber && n == readers.RequestID)
	for _, p := range probes {
		switch path := parsePath(p); {
		case p == readers.PMessages:
			out[p] = "1"
		case p == readers.PMatched:
			out[p] = yesNo(matched)
		case path[0] == "id":
			out[p] = renderRaw(env.ID)
		case path[0] == "result" && resErr != nil:
			out[p] = "error: type"
		default:
			out[p] = probe(reflect.ValueOf(res), path[1:])
		}
	}
	return out
}

func fill(out map[string]string, probes []string, cell, messages string) {
	for _, p := range probes {
		out[p] = cell
		if p == readers.PMessages {
			out[p] = messages
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func short(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

var pathPart = regexp.MustCompile(`^([^\[]*)((?:\[\d+\])*)$`)
var pathIndex = regexp.MustCompile(`\[(\d+)\]`)

// parsePath splits "result.tools[0].name" into "result", "tools", 0,
// "name".
func parsePath(p string) []any {
	var out []any
	for _, part := range strings.Split(p, ".") {
		m := pathPart.FindStringSubmatch(part)
		if m[1] != "" {
			out = append(out, m[1])
		}
		for _, i := range pathIndex.FindAllStringSubmatch(m[2], -1) {
			n, _ := strconv.Atoi(i[1])
			out = append(out, n)
		}
	}
	return out
}

// probe walks a decoded Go value along path (struct fields by their json
// names, map keys, slice indexes) and renders what is there. A nil
// pointer, and the zero value of an omitempty field, are absent: that is
// how the value writes itself back; a field without omitempty is its
// value even when the message had none (the go-sdk's readOnlyHint is a
// plain bool).
func probe(v reflect.Value, path []any) string {
	for _, k := range path {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return "absent"
			}
			v = v.Elem()
		}
		switch k := k.(type) {
		case int:
			if (v.Kind() != reflect.Slice && v.Kind() != reflect.Array) || k >= v.Len() {
				return "absent"
			}
			v = v.Index(k)
		case string:
			switch v.Kind() {
			case reflect.Map:
				e := v.MapIndex(reflect.ValueOf(k))
				if !e.IsValid() {
					return "absent"
				}
				v = e
			case reflect.Struct:
				f, omit, ok := field(v, k)
				if !ok || (omit && f.IsZero()) {
					return "absent"
				}
				v = f
			default:
				return "absent"
			}
		}
	}
	if (v.Kind() == reflect.Pointer) && v.IsNil() {
		return "absent"
	}
	return renderValue(v)
}

// field finds the struct field named name in JSON, through embedded
// structs as encoding/json does.
func field(v reflect.Value, name string) (reflect.Value, bool, bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if sf.Anonymous && tag == "" {
			fv := v.Field(i)
			for fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					break
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				if f, omit, ok := field(fv, name); ok {
					return f, omit, true
				}
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if tag == "" {
			tag = sf.Name
		}
		if tag == name {
			return v.Field(i), strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"), true
		}
	}
	return reflect.Value{}, false, false
}

func renderAny(x any) string { return renderValue(reflect.ValueOf(x)) }

// renderValue writes v as the other readers write theirs: compact JSON,
// keys sorted, every non-ASCII character as a \u escape, NaN and the
// infinities as Python writes them.
func renderValue(v reflect.Value) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func writeValue(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("null")
		return
	}
	if v.Type() == rawMessageType {
		b.WriteString(renderRaw(v.Bytes()))
		return
	}
	if n, ok := v.Interface().(json.Number); ok {
		b.WriteString(n.String())
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		writeValue(b, v.Elem())
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.String:
		writeString(b, v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		switch f := v.Float(); {
		case math.IsNaN(f):
			b.WriteString("NaN")
		case math.IsInf(f, 1):
			b.WriteString("Infinity")
		case math.IsInf(f, -1):
			b.WriteString("-Infinity")
		default:
			j, _ := json.Marshal(f)
			b.Write(j)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("null")
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, v.Index(i))
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.String())
			b.WriteByte(':')
			writeValue(b, v.MapIndex(k))
		}
		b.WriteByte('}')
	default:
		j, err := json.Marshal(v.Interface())
		if err != nil {
			b.WriteString("error: " + err.Error())
			return
		}
		b.WriteString(renderRaw(j))
	}
}

// writeString writes s as JSON.stringify and Python's json.dumps
// (ensure_ascii) do; a byte that is not UTF-8, which only a Go string
// can hold, as \xNN.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
		i += n
	}
	b.WriteByte('"')
}

// renderRaw writes raw JSON text as it stands, its non-ASCII bytes
// escaped (UTF-8 as \u escapes, other bytes as \xNN).
func renderRaw(raw []byte) string {
	if len(raw) == 0 {
		return "absent"
	}
	var b strings.Builder
	s := string(raw)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < utf8.RuneSelf:
			b.WriteByte(s[i])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}
