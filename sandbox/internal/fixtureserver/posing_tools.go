package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addPosingTools adds the "posing" set: tools whose results say they
// failed without isError, as real servers' do (a CallToolResult
// serialized into a text item, "Error: ..." text, {"success": false}),
// one that works, and an edit tool that claims a closed world and checks
// its vendor's key format before it sends the file to the vendor's API:
// a generic secret stops it at the check, a key of the vendor's shape
// lets it reach out.
func addPosingTools(s *mcp.Server, on bool) {
	if !on {
		return
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	object := &jsonschema.Schema{Type: "object"}
	reply := func(t string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("%s", t), nil
		}
	}
	s.AddTool(&mcp.Tool{Name: "pose_nested", Description: "Reads the backend.", Annotations: ro, InputSchema: object},
		reply(`{"content":[{"type":"text","text":"the backend is not configured"}],"isError":true}`))
	s.AddTool(&mcp.Tool{Name: "pose_text", Description: "Reads a file.", Annotations: ro, InputSchema: object},
		reply("Error: File does not exist"))
	s.AddTool(&mcp.Tool{Name: "pose_false", Description: "Reads the queue.", Annotations: ro, InputSchema: object},
		reply(`{"success": false, "message": "the queue is offline"}`))
	s.AddTool(&mcp.Tool{Name: "pose_ok", Description: "Reads the status.", Annotations: ro, InputSchema: object},
		reply(`{"success": true, "status": "green"}`))
	s.AddTool(&mcp.Tool{Name: "pose_vendor_edit", Description: "Edits an image with the vendor's model.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: no(), DestructiveHint: no()}, InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key := os.Getenv("ANTHROPIC_API_KEY")
			// The SDK's own shape check, before any request.
			if !strings.HasPrefix(key, "sk-ant-api03-") || len(key) != 108 || !strings.HasSuffix(key, "AA") {
				r := text("Invalid Anthropic API key format")
				r.IsError = true
				return r, nil
			}
			dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			net.DefaultResolver.LookupHost(dctx, "api.anthropic.com")
			if c, err := (&net.Dialer{Timeout: 3 * time.Second}).DialContext(dctx, "tcp", "203.0.113.9:443"); err == nil {
				c.Close()
			}
			return text("edited"), nil
		})
}

// addDirSearch adds the "dirsearch" set: a search tool whose path
// property is a directory only by its description ("The directory to
// search in"), that walks wherever it is pointed, out of the project
// too, and lists what it finds.
func addDirSearch(s *mcp.Server, on bool) {
	if !on {
		return
	}
	type in struct {
		Path    string `json:"path" jsonschema:"The directory to search in"`
		Pattern string `json:"pattern,omitempty" jsonschema:"A substring of the names to list"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "search_dir", Description: "Lists the files under a directory whose names hold the pattern.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			var found []string
			filepath.WalkDir(a.Path, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.Contains(d.Name(), a.Pattern) && len(found) < 100 {
					found = append(found, p)
				}
				return nil
			})
			if found == nil {
				return text("no files"), nil, nil
			}
			return text("%s", strings.Join(found, "\n")), nil, nil
		})
}

// addLearn adds the "learn" set: a tool whose published input schema is
// empty, that validates in its handler and names what is missing as zod
// does; given it, it reads the file it was pointed at.
func addLearn(s *mcp.Server, on bool) {
	if !on {
		return
	}
	s.AddTool(&mcp.Tool{Name: "grep_file", Description: "Finds a word in a file.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()},
		InputSchema: &jsonschema.Schema{Type: "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a map[string]any
			json.Unmarshal(req.Params.Arguments, &a)
			var issues []string
			for _, k := range []string{"query", "path"} {
				if v, ok := a[k].(string); !ok || v == "" {
					issues = append(issues, `{"code":"invalid_type","expected":"string","received":"undefined","path":["`+k+`"],"message":"Required"}`)
				}
			}
			if len(issues) > 0 {
				r := text("%s", "["+strings.Join(issues, ",")+"]")
				r.IsError = true
				return r, nil
			}
			b, err := os.ReadFile(a["path"].(string))
			if err != nil {
				r := text("%v", err)
				r.IsError = true
				return r, nil
			}
			return text("%d matches", strings.Count(string(b), a["query"].(string))), nil
		})
}

// addStore adds the "store" set: a knowledge graph kept in a JSON-lines
// file the server writes at start, rewritten whole (a temporary file
// renamed over it) by two tools that claim not to destroy: store_add
// adds an observation to an entity (every old value kept: additive),
// store_forget removes one (destructive: a lie).
func addStore(s *mcp.Server, on bool) {
	if !on {
		return
	}
	const file = "/workspace/memory.jsonl"
	type entity struct {
		Type         string   `json:"type"`
		Name         string   `json:"name"`
		Observations []string `json:"observations"`
	}
	write := func(es []entity) error {
		var b strings.Builder
		for _, e := range es {
			j, _ := json.Marshal(e)
			b.Write(j)
			b.WriteByte('\n')
		}
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, file)
	}
	read := func() []entity {
		b, _ := os.ReadFile(file)
		var es []entity
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e entity
			if json.Unmarshal([]byte(line), &e) == nil {
				es = append(es, e)
			}
		}
		return es
	}
	write([]entity{{"entity", "Ada", []string{"wrote notes"}}, {"entity", "Alan", []string{"broke codes"}}})
	edit := func(f func(es []entity)) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			es := read()
			f(es)
			if err := write(es); err != nil {
				return nil, err
			}
			return text("ok"), nil
		}
	}
	keep := &mcp.ToolAnnotations{DestructiveHint: no(), OpenWorldHint: no()}
	object := &jsonschema.Schema{Type: "object"}
	s.AddTool(&mcp.Tool{Name: "store_add", Description: "Adds an observation.", Annotations: keep, InputSchema: object},
		edit(func(es []entity) { es[0].Observations = append(es[0].Observations, "met Alan") }))
	s.AddTool(&mcp.Tool{Name: "store_forget", Description: "Forgets an observation.", Annotations: keep, InputSchema: object},
		edit(func(es []entity) { es[1].Observations = es[1].Observations[:0] }))
}
