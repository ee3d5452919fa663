package main

// The stateful tools (set "stateful") need what a real server needs of
// its client: a working directory set first, a session id an earlier
// result returned, a time zone that is one, a boolean where a union also
// takes a string, a number the server accepts only on the second try.
// Each refuses what does not fit as real servers do: an isError
// validation message, or JSON-RPC -32602.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
	_ "time/tzdata" // the image may have no zoneinfo

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func fail(format string, args ...any) *mcp.CallToolResult {
	r := text(format, args...)
	r.IsError = true
	return r
}

func addStateful(s *mcp.Server) {
	var mu sync.Mutex
	var wd string
	sessions := map[string]bool{}
	args := func(req *mcp.CallToolRequest) map[string]any {
		var m map[string]any
		json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	s.AddTool(&mcp.Tool{Name: "set_working_dir", Description: "Sets the directory the other tools work in.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"an existing directory"}},"required":["path"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p, _ := args(req)["path"].(string)
			if st, err := os.Stat(p); err != nil || !st.IsDir() {
				return fail("Invalid path: must be an existing directory"), nil
			}
			mu.Lock()
			wd = p
			mu.Unlock()
			return text("working directory set"), nil
		})
	s.AddTool(&mcp.Tool{Name: "list_here", Description: "Lists the working directory. Read-only.", Annotations: ro,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if wd == "" {
				return fail("no working directory: call set_working_dir first"), nil
			}
			ents, err := os.ReadDir(wd)
			if err != nil {
				return fail("%v", err), nil
			}
			return text("%d entries", len(ents)), nil
		})
	s.AddTool(&mcp.Tool{Name: "create_session", Description: "Opens a session; returns its id.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			id := fmt.Sprintf("sess-%d-%d", os.Getpid(), len(sessions)+1)
			sessions[id] = true
			return text("Session created. Session ID: %s", id), nil
		})
	s.AddTool(&mcp.Tool{Name: "use_session", Description: "Works in a session create_session opened.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"sessionId":{"type":"string"}},"required":["sessionId"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id, _ := args(req)["sessionId"].(string)
			mu.Lock()
			defer mu.Unlock()
			if !sessions[id] {
				return fail("unknown session %q", id), nil
			}
			return text("used session"), nil
		})
	s.AddTool(&mcp.Tool{Name: "convert_time", Description: "Converts a time to another zone. Read-only.", Annotations: ro,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"targetTimezone":{"type":"string"},"time":{"type":"string"}},"required":["targetTimezone","time"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m := args(req)
			tz, _ := m["targetTimezone"].(string)
			loc, err := time.LoadLocation(tz)
			if err != nil || tz == "" {
				return fail("Invalid time zone %q: expected an IANA name", tz), nil
			}
			ts, _ := m["time"].(string)
			t, err := time.Parse(time.RFC3339, ts)
			if err != nil {
				return fail("Invalid time: expected RFC 3339"), nil
			}
			return text("%s", t.In(loc).Format(time.RFC3339)), nil
		})
	s.AddTool(&mcp.Tool{Name: "toggle", Description: "Turns a flag on or off. Read-only.", Annotations: ro,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"flag":{"type":["boolean","string"]}},"required":["flag"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, ok := args(req)["flag"].(bool); !ok {
				return fail("Expected boolean, received string"), nil
			}
			return text("toggled"), nil
		})
	s.AddTool(&mcp.Tool{Name: "picky", Description: "Takes a count of at least 5 (its schema does not say). Read-only.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: no()},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if n, _ := args(req)["count"].(float64); n < 5 {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "count must be at least 5"}
			}
			return text("counted"), nil
		})
}
