package main

// The environment tools (set "env") are what real servers do with the
// sandbox's environment: fetch a page (the sinkhole answers it) and read
// the seeded project's git history (the image's git, the planted
// repository).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fetchArgs struct {
	URL string `json:"url,omitempty" jsonschema:"the page to fetch (default http://example.com/)"`
}

func addEnvTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "fetch_page", Description: "Fetches a web page and returns its status and body.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in fetchArgs) (*mcp.CallToolResult, any, error) {
			u := in.URL
			if u == "" {
				u = "http://example.com/"
			}
			hc := &http.Client{Timeout: 5 * time.Second}
			resp, err := hc.Get(u)
			if err != nil {
				return text("fetch: %v", err), nil, nil
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if err != nil {
				return text("status: %s; body: %v", resp.Status, err), nil, nil
			}
			return text("status: %s\ncontent-type: %s\n\n%s", resp.Status, resp.Header.Get("Content-Type"), body), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "git_history", Description: "Shows the git history and status of the first repository in /workspace.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			repos, _ := filepath.Glob("/workspace/*/.git")
			if len(repos) == 0 {
				return text("no repository"), nil, nil
			}
			dir := filepath.Dir(repos[0])
			var out []string
			for _, args := range [][]string{
				{"log", "--format=%h %an %ad %s", "--date=iso"},
				{"status", "--porcelain", "--branch"},
				{"fsck", "--no-dangling"},
			} {
				cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
				b, err := cmd.CombinedOutput()
				out = append(out, fmt.Sprintf("$ git %s (%v)\n%s", strings.Join(args, " "), err, b))
			}
			return text("%s", strings.Join(out, "\n")), nil, nil
		})
}
