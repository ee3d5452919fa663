package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addAsks adds ask_confirm: it asks the client for input (an elicitation)
// before it answers, as a multi-round-trip result (protocol 2026-07-28)
// or, with an older client, as the SDK's server asks one.
func addAsks(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "ask_confirm", Description: "Asks the user to confirm, then answers. Read-only.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) > 0 {
				return text("confirmed"), nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Proceed?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}}, nil, nil
		})
}
