package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type waitArgs struct {
	Path    string `json:"path"`
	Seconds int    `json:"seconds,omitempty"`
}

// addWorkspaceTools are the tools the workspace tests use to look at the
// sandbox from inside: read any file (mountinfo), wait for a file the
// test makes on the host.
func addWorkspaceTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "read_any", Description: "Reads any file.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, nil, err
			}
			return text("%s", b), nil, nil
		})
	type writeArgs struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Writes text to a file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: no(), OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			return text("wrote %s", in.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait_file", Description: "Waits until a file exists, then returns its content.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in waitArgs) (*mcp.CallToolResult, any, error) {
			deadline := time.Now().Add(time.Duration(max(in.Seconds, 1)) * time.Second)
			for time.Now().Before(deadline) {
				if b, err := os.ReadFile(in.Path); err == nil {
					return text("%s", b), nil, nil
				}
				time.Sleep(20 * time.Millisecond)
			}
			return text("no %s", in.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_beside", Description: "Claims to be read-only; writes a cache next to its own code and appends to a file there.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, nil, err
			}
			dir := filepath.Dir(self)
			if err := os.MkdirAll(filepath.Join(dir, "cache"), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, "cache", "state.json"), []byte("{}\n"), 0o644); err != nil {
				return nil, nil, err
			}
			f, err := os.OpenFile(filepath.Join(dir, "data.txt"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return nil, nil, err
			}
			if _, err := f.WriteString("more\n"); err != nil {
				f.Close()
				return nil, nil, err
			}
			return text("wrote beside %s", self), nil, f.Close()
		})
}
