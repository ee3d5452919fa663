package wire

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	segjson "github.com/segmentio/encoding/json"
)

// protocolFields are the names of JSON-RPC's and MCP's fields (the
// schema's properties, and the JSON Schema keywords a Go client decodes
// into a struct): a key equal to one of them under case folding, and not
// it, is read as the field by Go's encoding/json alone. TestFieldsCoverGoSDK
// holds the list to the go-sdk's own types.
var protocolFields = []string{
	// JSON-RPC
	"jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
	// MCP results and params
	"_meta", "protocolVersion", "capabilities", "serverInfo", "clientInfo", "instructions",
	"name", "title", "version", "description", "websiteUrl", "icons", "src", "mimeType", "sizes", "theme",
	"tools", "nextCursor", "cursor", "inputSchema", "outputSchema", "annotations", "execution", "taskSupport",
	"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
	"content", "structuredContent", "isError", "type", "text", "blob", "uri", "uriTemplate", "resource",
	"resources", "resourceTemplates", "contents", "prompts", "messages", "role", "arguments", "required",
	"audience", "priority", "lastModified", "size", "toolUseId", "toolChoice", "input",
	"roots", "sampling", "elicitation", "logging", "completions", "experimental", "listChanged", "subscribe",
	"progressToken", "progress", "total", "requestId", "reason", "level", "logger", "ttlMs", "cacheScope",
	"mode", "requestedSchema", "url", "elicitationId", "action", "ref", "argument", "value", "values", "hasMore",
	"completion", "context", "model", "stopReason", "maxTokens", "systemPrompt", "includeContext",
	"temperature", "stopSequences", "metadata", "modelPreferences", "hints", "costPriority",
	"speedPriority", "intelligencePriority", "extensions", "tasks", "task", "taskId", "status",
	"inputRequests", "inputResponses", "requestState", "resultType", "supportedVersions",
	// JSON Schema keywords a Go client decodes as struct fields
	"$schema", "$id", "$ref", "$defs", "properties", "items", "additionalProperties", "enum", "const",
	"default", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "anyOf", "oneOf",
	"allOf", "not", "definitions", "patternProperties",
}

var (
	fields      = map[string]bool{}
	folded      = map[string]string{} // foldKey -> field
	maxFieldLen int
)

func init() {
	for _, f := range protocolFields {
		fields[f] = true
		folded[foldKey(f)] = f
		maxFieldLen = max(maxFieldLen, len(f))
	}
}

// Unmarshal decodes b into v with field names matched case-sensitively,
// as JSON.parse and the go-sdk read them (std encoding/json folds case).
// It is github.com/segmentio/encoding/json, the go-sdk's own reader, so
// the judge and a go-sdk client decode alike.
func Unmarshal(b []byte, v any) error {
	rest, err := segjson.Parse(b, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		// One value, as json.Unmarshal: trailing data is an error.
		err = fmt.Errorf("wire: %d bytes after the value", len(rest))
	}
	return err
}

// IDKey keys a raw JSON-RPC id in its exact form: an integer as its
// decimal, a string quoted; "" for any other form (1.0, 1e0, an integer
// past int64, null).
func IDKey(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		r, err := Read(raw)
		if err != nil || r.Ambiguous() {
			return ""
		}
		var s string
		if Unmarshal(r.Canonical, &s) != nil {
			return ""
		}
		return strconv.Quote(s)
	}
	if !intLiteral.Match(raw) {
		return ""
	}
	if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	return ""
}

var intLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// JSNumber is JavaScript's Number(id) for a raw JSON id: how the
// TypeScript SDK matches a response to its requests (protocol.js
// _onresponse). ok is false for NaN and for what is neither a number nor
// a string.
func JSNumber(raw []byte) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	r, err := Read(raw)
	if err != nil {
		return 0, false
	}
	c := r.Canonical
	switch {
	case c[0] == '"':
		var s string
		if Unmarshal(c, &s) != nil {
			return 0, false
		}
		return jsStringToNumber(s)
	case c[0] == '-' || (c[0] >= '0' && c[0] <= '9'):
		f, err := strconv.ParseFloat(string(c), 64)
		return f, err == nil
	case string(c) == "null":
		return 0, true // Number(null) is 0
	case string(c) == "true":
		return 1, true
	case string(c) == "false":
		return 0, true
	}
	return 0, false
}

// jsStringToNumber is ECMAScript's StringToNumber.
func jsStringToNumber(s string) (float64, bool) {
	s = strings.TrimFunc(s, isJSSpace)
	switch {
	case s == "":
		return 0, true
	case s == "Infinity" || s == "+Infinity":
		return math.Inf(1), true
	case s == "-Infinity":
		return math.Inf(-1), true
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			digits := s[2:]
			f := 0.0
			for _, c := range digits {
				d, err := strconv.ParseUint(string(c), base, 8)
				if err != nil {
					return 0, false
				}
				f = f*float64(base) + float64(d)
			}
			return f, true
		}
	}
	if !jsDecimal.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

var jsDecimal = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// isJSSpace is ECMAScript's WhiteSpace and LineTerminator.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
