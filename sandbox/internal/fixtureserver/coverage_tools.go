package main

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// coverageTerminal is a tool name and description text that would act on
// a terminal printed raw: clear the screen, a carriage return, the bell.
const coverageTerminal = "\x1b[2J\r\a"

// addCoverageTools adds the "coverage" set: a tool that works (its
// description, and the name of a twin, carry terminal control
// characters), one whose every call fails, and one no valid input can
// call.
func addCoverageTools(s *mcp.Server, on bool) {
	if !on {
		return
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	ok := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("ok"), nil
	}
	object := &jsonschema.Schema{Type: "object"}
	s.AddTool(&mcp.Tool{Name: "cov_ok", Description: "Works." + coverageTerminal, Annotations: ro, InputSchema: object}, ok)
	s.AddTool(&mcp.Tool{Name: "cov_ok" + coverageTerminal, Description: "Works too.", Annotations: ro, InputSchema: object}, ok)
	s.AddTool(&mcp.Tool{Name: "cov_fails", Description: "Every call fails.", Annotations: ro, InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("cov_fails: the backend is not configured" + coverageTerminal)
			res.IsError = true
			return res, nil
		})
	// "not": {} admits no value: no input is valid, so the scan cannot
	// call it.
	never := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Not: &jsonschema.Schema{}}}, Required: []string{"x"}}
	s.AddTool(&mcp.Tool{Name: "cov_never", Description: "No input is valid.", Annotations: ro, InputSchema: never}, ok)
}
