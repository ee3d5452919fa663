package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// flood is a stdio MCP server written by hand (the SDK's server would not
// send what it sends) that tries to exhaust its client, for the runner's
// bounds:
//
//	fixtureserver flood [pages=N] [page-bytes=B] [tools=N] [schema-bytes=B]
//	    [result-bytes=B] [depth=D] [notify-bytes=B] [stderr-bytes=B] [files=N] [name-bytes=B] [deep-dirs=N] [invalid]
//
// pages-1 pages of tools/list come first, each with tools padding tools
// (default 1) whose descriptions make the page page-bytes long; the last
// page lists the tools that misbehave when called:
//
//   - big: a text result of result-bytes;
//   - deep: a result nested depth deep (in structuredContent);
//   - chatty: a notification of notify-bytes, then a small result;
//   - wide_schema: listed with an inputSchema of schema-bytes;
//   - invalid (with the flag invalid): a message that is JSON but no
//     JSON-RPC, which the SDK cannot read;
//   - echo: a small result, to show the session still runs.
//
// Before serving, it writes stderr-bytes to stderr and makes files empty
// files in /tmp/f (the startup flood of the snapshot's entry bound; their
// names padded to name-bytes, default 6) and a
// chain of deep-dirs directories /tmp/d/d/d/... (paths far past PATH_MAX).
func flood(args []string) int {
	o := map[string]int{"pages": 1, "tools": 1}
	invalid := false
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			invalid = invalid || a == "invalid"
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "flood: %s: %v\n", a, err)
			return 2
		}
		o[k] = n
	}
	if n := o["stderr-bytes"]; n > 0 {
		line := strings.Repeat("e", 1023) + "\n"
		for i := 0; i < n; i += len(line) {
			io.WriteString(os.Stderr, line)
		}
	}
	if n := o["files"]; n > 0 {
		os.MkdirAll("/tmp/f", 0o755)
		pad := strings.Repeat("n", max(o["name-bytes"]-6, 0))
		for i := range n {
			os.WriteFile(fmt.Sprintf("/tmp/f/%s%06d", pad, i), nil, 0o644)
		}
	}
	if n := o["deep-dirs"]; n > 0 {
		wd, _ := os.Getwd()
		os.Chdir("/tmp")
		for range n {
			os.Mkdir("d", 0o755)
			if os.Chdir("d") != nil {
				break
			}
		}
		os.Chdir(wd)
	}
	serveRaw("flood", func(srv rawServer, req rawRequest) {
		out, send := srv.out, srv.send
		switch req.Method {
		case "tools/list":
			page, _ := strconv.Atoi(req.Params.Cursor)
			send(req.ID, floodPage(page, o, invalid))
		case "tools/call":
			floodCall(out, req.ID, req.Params.Name, o)
		default:
			send(req.ID, `{}`)
		}
	})
	return 0
}

// floodPage is page (from 0) of tools/list.
func floodPage(page int, o map[string]int, invalid bool) string {
	ro := `"annotations":{"readOnlyHint":true,"openWorldHint":false}`
	if page < o["pages"]-1 {
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		// Each tool is about 160 bytes besides its description.
		pad := max(o["page-bytes"]/max(o["tools"], 1)-160, 1)
		for i := range o["tools"] {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"pad_%d_%d","description":"%s","inputSchema":{"type":"object"},%s}`, page, i, strings.Repeat("d", pad), ro)
		}
		fmt.Fprintf(&b, `],"nextCursor":"%d"}`, page+1)
		return b.String()
	}
	tools := []string{"big", "deep", "chatty", "echo"}
	if invalid {
		tools = append(tools, "invalid")
	}
	var list []string
	for _, name := range tools {
		list = append(list, fmt.Sprintf(`{"name":%q,"description":"misbehaves when called","inputSchema":{"type":"object"},%s}`, name, ro))
	}
	if n := o["schema-bytes"]; n > 0 {
		list = append(list, fmt.Sprintf(`{"name":"wide_schema","inputSchema":{"type":"object","description":"%s"},%s}`, strings.Repeat("s", n), ro))
	}
	return `{"tools":[` + strings.Join(list, ",") + `]}`
}

func floodCall(out *bufio.Writer, id json.RawMessage, name string, o map[string]int) {
	defer out.Flush()
	switch name {
	case "big":
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		chunk := strings.Repeat("r", 64<<10)
		for n := o["result-bytes"]; n > 0; n -= len(chunk) {
			io.WriteString(out, chunk[:min(n, len(chunk))])
		}
		io.WriteString(out, "\"}]}}\n")
	case "deep":
		d := max(o["depth"], 1)
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"deep"}],"structuredContent":{"v":%s0%s}}}`+"\n",
			id, strings.Repeat("[", d), strings.Repeat("]", d))
	case "chatty":
		fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}`+"\n", strings.Repeat("n", o["notify-bytes"]))
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"chatted"}]}}`+"\n", id)
	case "invalid":
		io.WriteString(out, `{"neither":"request nor response"}`+"\n")
	default:
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"echo"}]}}`+"\n", id)
	}
}
