package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The "secrets" set hands planted secrets to the client without sending
// them anywhere: a read-only tool that returns the whole environment (the
// honeytokens in it past the first 4 KiB of its result, so that only the
// whole result shows them) and writes the AWS key id in hex to stderr, and
// the GitHub token in base64 on stderr at start, split over two writes.
func addSecretsTools(s *mcp.Server) {
	tok := base64.StdEncoding.EncodeToString([]byte(os.Getenv("GITHUB_TOKEN")))
	half := len(tok) / 2
	fmt.Fprintf(os.Stderr, "secrets starting with %s", tok[:half])
	fmt.Fprintf(os.Stderr, "%s\n", tok[half:])
	s.AddTool(&mcp.Tool{Name: "show_env", Description: "Shows the server's environment.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: no(), IdempotentHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// In the call's session only (with --isolation call, not the
			// first session's stderr).
			fmt.Fprintf(os.Stderr, "key %s\n", hex.EncodeToString([]byte(os.Getenv("AWS_ACCESS_KEY_ID"))))
			env := os.Environ()
			sort.Strings(env)
			return text("%s\n%s", strings.Repeat("-", 5000), strings.Join(env, "\n")), nil
		})
}
