package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind names how two readings of a message part.
type Kind int

const (
	// DuplicateKey: one object has the same key twice (JSON.parse, Go and
	// Python keep the last; a first-wins reader, or one that refuses
	// duplicates, does not).
	DuplicateKey Kind = iota + 1
	// CaseVariantKey: a key equal to a protocol field under case folding
	// but not the field itself ("ANNOTATIONS", "ſ" for "s"): Go's
	// encoding/json reads it as the field, JSON.parse does not.
	CaseVariantKey
	// ProtoKey: a "__proto__" key, an own property to JSON.parse and the
	// prototype to any copy made by assignment.
	ProtoKey
	// NonFinite: NaN, Infinity or -Infinity, which Python's json reads
	// and JSON.parse and Go refuse.
	NonFinite
	// NumberOverflow: a number past the double range (1e400): Infinity to
	// JSON.parse and Python, an error to Go.
	NumberOverflow
	// ImpreciseInteger: an integer past 2^53: rounded by JSON.parse,
	// exact for Go's int64 and Python.
	ImpreciseInteger
	// LoneSurrogate: a \uD800-\uDFFF escape without its pair: kept by
	// JSON.parse and Python, U+FFFD to Go.
	LoneSurrogate
	// InvalidUTF8: bytes that are not UTF-8 in a string: each reader
	// replaces (or refuses) them its own way.
	InvalidUTF8
	// ByteOrderMark: the line starts with U+FEFF, which JSON.parse and
	// Go refuse and a bytes-reading Python accepts.
	ByteOrderMark
	// TrailingData: more after the first value on the line: a streaming
	// decoder (go-sdk's) reads a second message, JSON.parse none.
	TrailingData
	// IDForm: a response's id in another form than the request's (1.0,
	// "1" for 1): the TypeScript SDK matches it (Number(id)), the go-sdk
	// matches numbers only (1.5 truncated to 1), Python as written.
	IDForm
	// NotBoolean: a hint that is not a boolean ("true", 1): no claim to
	// the judge and the TypeScript SDK (which refuses the list), true to a
	// reader that coerces (pydantic).
	NotBoolean
	// ExtraEnvelopeKey: a member of a message beside jsonrpc, id, method,
	// params, result and error: the TypeScript SDK's strict envelope
	// drops the whole message, the others read it.
	ExtraEnvelopeKey
)

var kindNames = []string{DuplicateKey: "duplicate-key", CaseVariantKey: "case-variant-key", ProtoKey: "proto-key",
	NonFinite: "non-finite-number", NumberOverflow: "number-overflow", ImpreciseInteger: "imprecise-integer",
	LoneSurrogate: "lone-surrogate", InvalidUTF8: "invalid-utf8", ByteOrderMark: "byte-order-mark",
	TrailingData: "trailing-data", IDForm: "id-form", NotBoolean: "not-boolean", ExtraEnvelopeKey: "extra-envelope-key"}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Refuses says whether a line with this ambiguity has no canonical form:
// the strict reader does not take it whole, so nothing of it is forwarded.
func (k Kind) Refuses() bool {
	return k == NonFinite || k == NumberOverflow || k == ByteOrderMark || k == TrailingData
}

// Ambiguity is one place where two readers part.
type Ambiguity struct {
	Kind Kind
	// Path is where, from the message: "result.tools[3].annotations" (""
	// for the message itself). Bounded by maxPath.
	Path string
	// Key is the key concerned, for the key kinds (bounded by maxKey).
	Key string
	// Detail says what each reading gives, briefly.
	Detail string
}

func (a Ambiguity) String() string {
	where := a.Path
	if a.Key != "" {
		if where != "" {
			where += "."
		}
		where += strconv.Quote(a.Key)
	}
	if where == "" {
		where = "the message"
	}
	return fmt.Sprintf("%s at %s: %s", a.Kind, where, a.Detail)
}

// Limits on what one line's reading keeps: a server that floods the line
// with duplicates costs the runner these, and the count.
const (
	// MaxKept is the ambiguities kept per line; the rest are counted.
	MaxKept = 32
	maxPath = 256
	maxKey  = 64
	// MaxDepth bounds the nesting Read follows (the transports refuse
	// deeper messages before this).
	MaxDepth = 1024
)

// ErrRefused is why Read gives no canonical form: the line is not JSON to
// a strict reader, or is JSON only to some.
var ErrRefused = errors.New("not a JSON value every reader takes")

// Reading is one line read by the judge.
type Reading struct {
	// Canonical is the line re-encoded from the strict reading (compact,
	// keys in their order); nil when refused.
	Canonical []byte
	// Found are the first MaxKept ambiguities, in order; All counts them.
	Found []Ambiguity
	All   int
}

// Ambiguous says whether any two readers part on the line.
func (r Reading) Ambiguous() bool { return r.All > 0 }

// Read reads one line (one message) strictly and lists where readers
// part. err (wrapping ErrRefused) means no strict reader takes the line
// whole; Found still says why, where some other reader would.
func Read(line []byte) (Reading, error) {
	p := &parser{src: line}
	var r Reading

	if bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
		p.note(Ambiguity{Kind: ByteOrderMark, Detail: "a UTF-8 byte-order mark before the message: refused by JSON.parse and Go, skipped by a Python reading bytes"})
		p.refused = true
		p.pos = 3
	}
	p.ws()
	out, err := p.value(nil, 0, pathRoot)
	if err == nil {
		p.ws()
		if p.pos < len(p.src) {
			p.note(Ambiguity{Kind: TrailingData, Detail: fmt.Sprintf("%d bytes after the message's value: refused by JSON.parse, a second message to a streaming decoder", len(p.src)-p.pos)})
			p.refused = true
		}
	}
	r.Found, r.All = p.found, p.all
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if p.refused {
		return r, fmt.Errorf("%w: %s", ErrRefused, r.Found[0].Kind)
	}
	r.Canonical = out
	return r, nil
}

// Check lists where the readers part on line (at most MaxKept).
func Check(line []byte) []Ambiguity {
	r, _ := Read(line)
	return r.Found
}

// Canonical is line as the judge read it, re-encoded; an error wrapping
// ErrRefused when it has no such form.
func Canonical(line []byte) ([]byte, error) {
	r, err := Read(line)
	return r.Canonical, err
}

// pathKind is where in the protocol an object sits, for which keys are
// fields (folded by struct decoders) and which are a map's keys.
type pathKind int

const (
	pathRoot   pathKind = iota // a protocol object: its keys are fields
	pathMap                    // a map: its keys are names (property names, _meta keys)
	pathOpaque                 // a free value: nothing in it is a field
)

// childKind is the kind of the value under key in an object of kind k.
func childKind(k pathKind, key string) pathKind {
	switch {
	case k == pathOpaque:
		return pathOpaque
	case k == pathMap:
		return pathRoot // a map's value (a property's schema) has fields again
	}
	switch key {
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependentRequired":
		return pathMap
	case "_meta", "arguments", "structuredContent", "experimental", "data", "default", "const", "enum", "examples", "example":
		return pathOpaque
	}
	return pathRoot
}

type parser struct {
	src     []byte
	pos     int
	found   []Ambiguity
	all     int
	refused bool
	path    []string // the open path's elements
}

func (p *parser) note(a Ambiguity) {
	p.all++
	if len(p.found) >= MaxKept {
		return
	}
	if a.Path == "" {
		a.Path = p.pathString()
	}
	if len(a.Key) > maxKey {
		a.Key = strings.ToValidUTF8(a.Key[:maxKey], "") + "…"
	}
	p.found = append(p.found, a)
}

func (p *parser) pathString() string {
	var b strings.Builder
	for _, e := range p.path {
		if b.Len() > 0 && e[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(e)
		if b.Len() > maxPath {
			return strings.ToValidUTF8(b.String()[:maxPath], "") + "…"
		}
	}
	return b.String()
}

func (p *parser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.pos}, args...)...)
}

// value reads one value at p.pos and appends its canonical form to out.
func (p *parser) value(out []byte, depth int, kind pathKind) ([]byte, error) {
	if depth > MaxDepth {
		return nil, p.errf("nested deeper than %d", MaxDepth)
	}
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(out, depth, kind)
	case c == '[':
		return p.array(out, depth, kind)
	case c == '"':
		if raw, ok := p.plainString(); ok {
			return append(out, raw...), nil
		}
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	case p.lit("true"):
		return append(out, "true"...), nil
	case p.lit("false"):
		return append(out, "false"...), nil
	case p.lit("null"):
		return append(out, "null"...), nil
	default:
		for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
			if p.lit(w) {
				p.note(Ambiguity{Kind: NonFinite, Detail: w + ": a number to Python's json, refused by JSON.parse and Go"})
				p.refused = true
				return append(out, "null"...), nil
			}
		}
	}
	return nil, p.errf("invalid character %q", p.src[p.pos])
}

// lit consumes w if it is next.
func (p *parser) lit(w string) bool {
	if bytes.HasPrefix(p.src[p.pos:], []byte(w)) {
		p.pos += len(w)
		return true
	}
	return false
}

type member struct {
	key      string
	from, to int // its canonical value in the object's buffer
}

func (p *parser) object(out []byte, depth int, kind pathKind) ([]byte, error) {
	p.pos++ // {
	var buf []byte
	var ms []member
	var seen map[string]int // key -> index of its last member, past a few
	lookup := func(key string) (int, bool) {
		if seen != nil {
			i, ok := seen[key]
			return i, ok
		}
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].from >= 0 && ms[i].key == key {
				return i, true
			}
		}
		return 0, false
	}
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return append(out, "{}"...), nil
	}
	for {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errf("expected a key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errf("expected ':'")
		}
		p.pos++
		p.ws()
		p.path = append(p.path, pathKey(key))
		from := len(buf)
		buf, err = p.value(buf, depth+1, childKind(kind, key))
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return nil, err
		}
		if i, dup := lookup(key); dup {
			p.note(Ambiguity{Kind: DuplicateKey, Key: key, Detail: "the key twice in one object: the last is read by JSON.parse, Go and Python, the first by a first-wins reader"})
			ms[i].from = -1 // dropped: the last is kept
		}
		if seen == nil && len(ms) >= 8 {
			seen = make(map[string]int, 16)
			for i, m := range ms {
				if m.from >= 0 {
					seen[m.key] = i
				}
			}
		}
		if seen != nil {
			seen[key] = len(ms)
		}
		ms = append(ms, member{key: key, from: from, to: len(buf)})
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end in an object")
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == '}' {
			p.pos++
			break
		}
		return nil, p.errf("expected ',' or '}'")
	}
	// Keys a struct decoder would take for a field they are not.
	if kind == pathRoot {
		_, message := lookup("jsonrpc")
		message = message && depth == 0
		for i := range ms {
			m := &ms[i]
			if m.from < 0 {
				continue
			}
			switch field, variant := caseVariant(m.key); {
			case message && !envelopeKeys[m.key] && !variant && m.key != "__proto__":
				p.note(Ambiguity{Kind: ExtraEnvelopeKey, Key: m.key, Detail: "a member the TypeScript SDK's envelope does not allow: it drops the whole message, the others read it"})
				m.from = -1
			case m.key == "__proto__":
				p.note(Ambiguity{Kind: ProtoKey, Key: m.key, Detail: "an own property to JSON.parse, the object's prototype to a copy made by assignment"})
				m.from = -1
			case variant:
				p.note(Ambiguity{Kind: CaseVariantKey, Key: m.key, Detail: fmt.Sprintf("the field %q to Go's encoding/json (case-insensitive), another key to JSON.parse, Python and go-sdk", field)})
				m.from = -1
			}
		}
		// A hint that is no boolean: dropped, the safe default every
		// reader then agrees on.
		if n := len(p.path); n > 0 && p.path[n-1] == "annotations" {
			for i := range ms {
				m := &ms[i]
				if v := string(buf[max(m.from, 0):m.to]); m.from >= 0 && hintNames[m.key] && v != "true" && v != "false" {
					p.note(Ambiguity{Kind: NotBoolean, Key: m.key, Detail: fmt.Sprintf("%.40s is no boolean: no claim to the judge, a refused list to the TypeScript SDK, true to a reader that coerces (pydantic)", v)})
					m.from = -1
				}
			}
		}
	} else if i, ok := lookup("__proto__"); ok {
		p.note(Ambiguity{Kind: ProtoKey, Key: "__proto__", Detail: "an own property to JSON.parse, the object's prototype to a copy made by assignment"})
		ms[i].from = -1
	}
	out = append(out, '{')
	first := true
	for _, m := range ms {
		if m.from < 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendString(out, m.key)
		out = append(out, ':')
		out = append(out, buf[m.from:m.to]...)
	}
	return append(out, '}'), nil
}

// envelopeKeys are a JSON-RPC message's members.
var envelopeKeys = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// hintNames are the safety hints, which are booleans or nothing.
var hintNames = map[string]bool{"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true}

func pathKey(k string) string {
	if len(k) > maxKey {
		k = strings.ToValidUTF8(k[:maxKey], "") + "…"
	}
	if k == "" || strings.ContainsAny(k, ".[]\"") {
		return strconv.Quote(k)
	}
	return k
}

func (p *parser) array(out []byte, depth int, kind pathKind) ([]byte, error) {
	p.pos++ // [
	out = append(out, '[')
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	// An array's elements are of the kind the array is (tools[i] are
	// protocol objects, enum[i] free values).
	for i := 0; ; i++ {
		p.ws()
		if i > 0 {
			out = append(out, ',')
		}
		p.path = append(p.path, "["+strconv.Itoa(i)+"]")
		var err error
		out, err = p.value(out, depth+1, kind)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end in an array")
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return append(out, ']'), nil
		}
		return nil, p.errf("expected ',' or ']'")
	}
}

// maxSafeInteger is 2^53: every integer up to it is a double exactly.
const maxSafeInteger = 1 << 53

func (p *parser) number(out []byte) ([]byte, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
		if p.lit("Infinity") {
			p.note(Ambiguity{Kind: NonFinite, Detail: "-Infinity: a number to Python's json, refused by JSON.parse and Go"})
			p.refused = true
			return append(out, "null"...), nil
		}
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errf("invalid number")
	}
	integer := true
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		integer = false
		if digits() == 0 {
			return nil, p.errf("invalid number")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		integer = false
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errf("invalid number")
		}
	}
	lit := p.src[start:p.pos]
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil && math.IsInf(f, 0) {
		p.note(Ambiguity{Kind: NumberOverflow, Detail: fmt.Sprintf("%.40s is past the double range: Infinity to JSON.parse and Python, an error to Go", lit)})
		p.refused = true
		return append(out, "null"...), nil
	}
	if integer && math.Abs(f) >= maxSafeInteger {
		if _, exact := exactInteger(lit); !exact {
			p.note(Ambiguity{Kind: ImpreciseInteger, Detail: fmt.Sprintf("%.40s is past 2^53: JSON.parse reads %s, Go's int64 and Python the integer itself", lit, strconv.FormatFloat(f, 'f', -1, 64))})
			// Written as the double every reader then agrees on.
			return strconv.AppendFloat(out, f, 'f', -1, 64), nil
		}
	}
	return append(out, lit...), nil
}

// exactInteger says whether an integer literal is a double exactly.
func exactInteger(lit []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return f, false
	}
	return f, strconv.FormatFloat(f, 'f', -1, 64) == strings.TrimPrefix(string(lit), "+")
}

// plainString consumes a string literal at p.pos that needs no writing
// again (printable ASCII, no escape) and returns it with its quotes.
func (p *parser) plainString() ([]byte, bool) {
	for i := p.pos + 1; i < len(p.src); i++ {
		c := p.src[i]
		if c == '"' {
			out := p.src[p.pos : i+1]
			p.pos = i + 1
			return out, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return nil, false
}

// str reads a string literal at p.pos and returns its value, noting lone
// surrogates and invalid UTF-8 (both U+FFFD in the value).
func (p *parser) str() (string, error) {
	p.pos++ // "
	// Most strings are plain ASCII: taken whole.
	for i := p.pos; i < len(p.src); i++ {
		c := p.src[i]
		if c == '"' {
			out := string(p.src[p.pos:i])
			p.pos = i + 1
			return out, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	var b strings.Builder
	loneNoted, invalidNoted := false, false
	for {
		if p.pos >= len(p.src) {
			return "", p.errf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errf("a control character in a string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return "", p.errf("unterminated escape")
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if r < 0xdc00 && bytes.HasPrefix(p.src[p.pos:], []byte(`\u`)) {
						save := p.pos
						p.pos += 2
						var ok2 bool
						if r2, ok2 = p.hex4(); !ok2 {
							return "", p.errf("invalid \\u escape")
						}
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b.WriteRune(d)
							continue
						}
						p.pos = save
					}
					if !loneNoted {
						loneNoted = true
						p.note(Ambiguity{Kind: LoneSurrogate, Detail: fmt.Sprintf("\\u%04x without its pair: kept by JSON.parse and Python, U+FFFD to Go", r)})
					}
					b.WriteRune(utf8.RuneError)
					continue
				}
				b.WriteRune(r)
			default:
				return "", p.errf("invalid escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && n == 1 {
				if !invalidNoted {
					invalidNoted = true
					p.note(Ambiguity{Kind: InvalidUTF8, Detail: fmt.Sprintf("byte %#02x is not UTF-8: each reader replaces or refuses it its own way", c)})
				}
				b.WriteRune(utf8.RuneError)
				p.pos++
				continue
			}
			b.WriteString(string(p.src[p.pos : p.pos+n]))
			p.pos += n
		}
	}
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// appendString appends s as a JSON string: valid UTF-8 (it is, from str),
// with the escapes every reader decodes alike.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf
	}
	if plain {
		return append(append(out, s...), '"')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c == '\n':
				out = append(out, `\n`...)
			case c == '\r':
				out = append(out, `\r`...)
			case c == '\t':
				out = append(out, `\t`...)
			case c < 0x20:
				out = fmt.Appendf(out, `\u%04x`, c)
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return append(out, '"')
}

// caseVariant says whether key is a protocol field's name under Unicode
// case folding (as Go's encoding/json matches a struct field) without
// being it, and which field.
func caseVariant(key string) (string, bool) {
	if fields[key] || len(key) > maxFieldLen*3 {
		return "", false
	}
	f, ok := folded[foldKey(key)]
	return f, ok
}

// foldKey maps each rune of s to the least rune of its case-folding
// orbit: two strings are equal under bytes.EqualFold exactly when their
// foldKeys are equal.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
