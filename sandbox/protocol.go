package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version the scan asks for: the newest the
// MCP SDK speaks (2026-07-28 with the SDK in go.mod, which asks with
// server/discover first and falls back to initialize at 2025-11-25). A
// server may answer any older version the SDK speaks (ProtocolVersions);
// the session goes on in it, and the report records it.
func ProtocolVersion() string { return mcp.SupportedProtocolVersions()[0] }

// ProtocolVersions are the MCP versions a scan accepts, newest first.
func ProtocolVersions() []string { return mcp.SupportedProtocolVersions() }

// DecodeTool reads one raw tool, keeping annotations and schemas as sent
// and telling "not declared" from "declared false" for each hint.
func DecodeTool(raw json.RawMessage) (report.Tool, error) {
	var t struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		Annotations  json.RawMessage `json:"annotations"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := wire.Unmarshal(raw, &t); err != nil {
		return report.Tool{}, fmt.Errorf("a listed tool does not decode: %v", err)
	}
	if t.Name == "" {
		return report.Tool{}, fmt.Errorf("a listed tool has no name: %s", raw)
	}
	tool := report.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
		Annotations: nullIfEmpty(t.Annotations), InputSchema: nullIfEmpty(t.InputSchema), OutputSchema: t.OutputSchema}
	if len(t.Annotations) > 0 && string(t.Annotations) != "null" {
		var h map[string]json.RawMessage
		if err := wire.Unmarshal(t.Annotations, &h); err != nil {
			return tool, fmt.Errorf("tool %q: annotations are not an object: %v", t.Name, err)
		}
		tool.Hints = report.Hints{ReadOnly: boolHint(h["readOnlyHint"]), Destructive: boolHint(h["destructiveHint"]),
			Idempotent: boolHint(h["idempotentHint"]), OpenWorld: boolHint(h["openWorldHint"])}
		if tool.Title == "" {
			var title string
			if wire.Unmarshal(h["title"], &title) == nil {
				tool.Title = title
			}
		}
	}
	return tool, nil
}

// resultText is the text of a result's content, bounded.
func resultText(res *mcp.CallToolResult, limit int) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource link %s]", c.URI)
		case *mcp.EmbeddedResource:
			b.WriteString("[embedded resource]")
		default:
			fmt.Fprintf(&b, "[%T]", c)
		}
		if b.Len() > limit {
			break
		}
	}
	s := b.String()
	if len(s) > limit {
		cut := limit
		for cut > max(limit-4, 0) && !utf8.RuneStart(s[cut]) {
			cut-- // not inside a character
		}
		s = s[:cut] + "…"
	}
	return report.EscapeInvalid(s)
}

func nullIfEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// boolHint is a declared boolean hint, or nil when absent or not a boolean
// (a non-boolean hint is no claim).
func boolHint(raw json.RawMessage) *bool {
	var b bool
	if len(raw) == 0 || wire.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}
