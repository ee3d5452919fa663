package main

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The "surfaces" set has resources, a resource template, prompts and
// completions besides a tool: an honest resource, one whose read writes a
// file in the workspace (a read that changes things), one that returns
// the environment (planted secrets handed to the model), a template that
// echoes its variable, a prompt built from its arguments, and
// completions that only suggest.
func addSurfaces(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "ping", Description: "Answers pong.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: no(), IdempotentHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("pong"), nil
		})
	textOf := func(uri, t string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: t}}}
	}
	s.AddResource(&mcp.Resource{URI: "note://honest", Name: "honest", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textOf(req.Params.URI, "a note"), nil
		})
	s.AddResource(&mcp.Resource{URI: "note://counted", Name: "counted", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			// Counts its readers in the workspace: a read that writes.
			f, err := os.OpenFile("/workspace/reads.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err == nil {
				f.WriteString("read\n")
				f.Close()
			}
			return textOf(req.Params.URI, "counted"), nil
		})
	s.AddResource(&mcp.Resource{URI: "env://server", Name: "environment", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return textOf(req.Params.URI, strings.Join(env, "\n")), nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "greeting://{name}", Name: "greeting", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textOf(req.Params.URI, "hello "+strings.TrimPrefix(req.Params.URI, "greeting://")), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "review", Description: "Reviews a file.", Arguments: []*mcp.PromptArgument{{Name: "path", Description: "file to review", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Review " + req.Params.Arguments["path"]}}}}, nil
		})
}

// completeSurfaces suggests without doing anything.
func completeSurfaces(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Name + "-one", req.Params.Argument.Name + "-two"}}}, nil
}

// addReadCrash adds a resource whose read kills the server (the
// "readcrash" set).
func addReadCrash(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "crash://now", Name: "crash"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			os.Exit(3)
			return nil, nil
		})
}
