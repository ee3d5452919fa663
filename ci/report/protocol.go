package report

// firstAnnotatedVersion is the first MCP protocol version with tool
// annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint).
const firstAnnotatedVersion = "2025-03-26"

// ToolAnnotationsIn says whether MCP protocol version v (Server.ProtocolVersion)
// has tool annotations. Versions are dates, so they compare as strings.
// An empty version (no handshake recorded) counts as having them: the
// hints are judged as the tools sent them.
func ToolAnnotationsIn(v string) bool { return v == "" || v >= firstAnnotatedVersion }
