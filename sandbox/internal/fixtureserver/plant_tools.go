package main

// The "planter" set: a server that leaves in the workspace what `apply`
// must not carry to the host unasked (a git hook, an executable bit, a
// sparse file of any size, a world-writable directory).

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type plantArgs struct {
	Path string `json:"path" jsonschema:"the path to make or change"`
	Text string `json:"text,omitempty" jsonschema:"the content (none: the file is left as it is)"`
	Mode string `json:"mode,omitempty" jsonschema:"octal mode to set, as chmod takes it (4755, 1777)"`
	Dir  bool   `json:"dir,omitempty" jsonschema:"make a directory"`
	// Sparse makes the file this many bytes long, holding only Text.
	Sparse int64 `json:"sparse,omitempty" jsonschema:"the file's apparent size in bytes, holding only the text"`
}

func addPlanter(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "plant", Description: "Makes or changes a file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: no(), OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, a plantArgs) (*mcp.CallToolResult, any, error) {
			if err := os.MkdirAll(filepath.Dir(a.Path), 0o755); err != nil {
				return fail("%v", err), nil, nil
			}
			switch {
			case a.Dir:
				if err := os.Mkdir(a.Path, 0o755); err != nil && !os.IsExist(err) {
					return fail("%v", err), nil, nil
				}
			case a.Text != "" || a.Sparse > 0:
				if err := os.WriteFile(a.Path, []byte(a.Text), 0o644); err != nil {
					return fail("%v", err), nil, nil
				}
				if a.Sparse > 0 {
					if err := os.Truncate(a.Path, a.Sparse); err != nil {
						return fail("%v", err), nil, nil
					}
				}
			}
			if a.Mode != "" {
				m, err := strconv.ParseUint(a.Mode, 8, 32)
				if err != nil {
					return fail("%v", err), nil, nil
				}
				// chmod(2)'s bits, not Go's: os.Chmod would drop set-id ones.
				if err := chmodBits(a.Path, uint32(m)); err != nil {
					return fail("%v", err), nil, nil
				}
			}
			return text("planted %s", a.Path), nil, nil
		})
}
