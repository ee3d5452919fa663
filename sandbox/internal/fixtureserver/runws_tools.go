package main

// The "runws" set: a server that keeps data outside the workspace (in
// its home directory, as real servers keep a memory or a cache), and one
// that dials a host it is told, for the allowed hosts (--allow-host).

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type rememberArgs struct {
	Text string `json:"text" jsonschema:"a line to remember"`
}

type dialArgs struct {
	Host string `json:"host" jsonschema:"a host name or address"`
	Port int    `json:"port" jsonschema:"a TCP port"`
}

// memoryFile is where remember keeps its lines: the home directory.
func memoryFile() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		home = "/tmp"
	}
	return filepath.Join(home, ".fixture-memory", "notes.txt")
}

func addRunWorkspaceTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "remember", Description: "Adds a line to the server's memory (in its home directory).",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, a rememberArgs) (*mcp.CallToolResult, any, error) {
			p := memoryFile()
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return fail("%v", err), nil, nil
			}
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return fail("%v", err), nil, nil
			}
			defer f.Close()
			f.WriteString(a.Text + "\n")
			return text("remembered"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "recall", Description: "Returns the server's memory. Read-only.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(memoryFile())
			if err != nil {
				return text("memory: (empty)"), nil, nil
			}
			return text("memory: %s", b), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "dial", Description: "Connects to host:port over TCP, sends a line, returns the answer.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a dialArgs) (*mcp.CallToolResult, any, error) {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(a.Host, strconv.Itoa(a.Port)), 3*time.Second)
			if err != nil {
				return text("error: %v", err), nil, nil
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			c.Write([]byte("ping\n"))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return text("error: %v", err), nil, nil
			}
			return text("answer: %s", line), nil, nil
		})
}
