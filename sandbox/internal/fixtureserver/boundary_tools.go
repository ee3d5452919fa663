package main

// The boundary tools (set "boundary") take paths and URLs: open_note,
// list_folder, save_copy and fetch_page follow whatever they are given (a path out of /workspace,
// the cloud metadata address, the loopback), read_doc and fetch_public
// guard them as real servers do (an allowed-directory check after
// resolving the path; a refusal of loopback, link-local and private
// addresses). Every tool declares what it does honestly: only the
// boundary probes tell the unguarded from the guarded.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type urlArgs struct {
	URL string `json:"url" jsonschema:"the page to fetch"`
}

// boundaryRoot is the directory the boundary tools are given.
const boundaryRoot = "/workspace"

func addBoundaryTools(s *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	mcp.AddTool(s, &mcp.Tool{Name: "open_note", Description: "Reads a note in the workspace. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(under(in.Path)) // follows ".." out of the root
			if err != nil {
				return nil, nil, err
			}
			return text("%s", b), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_doc", Description: "Reads a document in the workspace. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			p := in.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(boundaryRoot, p)
			}
			p = filepath.Clean(p)
			if p != boundaryRoot && !strings.HasPrefix(p, boundaryRoot+"/") {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "access denied: path outside the allowed directories"}}}, nil, nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, err
			}
			return text("%s", b), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_folder", Description: "Lists a folder of the workspace. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in dirArgs) (*mcp.CallToolResult, any, error) {
			entries, err := os.ReadDir(under(in.Directory)) // follows ".." out of the root
			if err != nil {
				return nil, nil, err
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return text("%s", strings.Join(names, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "save_copy", Description: "Writes text to a file of the workspace, replacing it.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, in destArgs) (*mcp.CallToolResult, any, error) {
			p := under(in.Destination) // follows ".." out of the root
			if err := os.WriteFile(p, []byte(in.Text+"\n"), 0o644); err != nil {
				return nil, nil, err
			}
			return text("wrote %s", p), nil, nil
		})
	open := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: yes()}
	mcp.AddTool(s, &mcp.Tool{Name: "fetch_page", Description: "Fetches a web page. Read-only.", Annotations: open},
		func(ctx context.Context, req *mcp.CallToolRequest, in urlArgs) (*mcp.CallToolResult, any, error) {
			return fetch(ctx, in.URL), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fetch_public", Description: "Fetches a public web page; refuses private addresses. Read-only.", Annotations: open},
		func(ctx context.Context, req *mcp.CallToolRequest, in urlArgs) (*mcp.CallToolResult, any, error) {
			if why := private(in.URL); why != "" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + why}}}, nil, nil
			}
			return fetch(ctx, in.URL), nil, nil
		})
}

type dirArgs struct {
	Directory string `json:"directory" jsonschema:"the folder to list"`
}

type destArgs struct {
	Destination string `json:"destination" jsonschema:"the file to write"`
	Text        string `json:"text,omitempty" jsonschema:"what to write"`
}

// under is p as an unguarded tool takes it: absolute as given, relative
// to the root, ".." followed either way.
func under(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(boundaryRoot, p)
}

func yes() *bool { b := true; return &b }

// fetch gets u and says how it went (the sandbox has no network: an
// error, or the sinkhole's answer).
func fetch(ctx context.Context, u string) *mcp.CallToolResult {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return text("bad url: %v", err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return text("fetch failed: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return text("%s\n%s", resp.Status, b)
}

// private says why u must not be fetched: a host that is the loopback, a
// link-local, private or unspecified address, or a name for one; "" when
// it may be.
func private(u string) string {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return "not an http(s) URL"
	}
	host := pu.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "a loopback name"
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return ""
	}
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsPrivate() || ip.IsUnspecified() {
		return fmt.Sprintf("private address %s", ip)
	}
	return ""
}
