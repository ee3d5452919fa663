package main

import (
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP serves s over streamable HTTP (at /mcp) or, with sse, the
// legacy HTTP+SSE transport (at /sse), on addr (":0": a port the kernel
// picks), and prints where, as real servers do: the runner's --port auto
// reads it. It never returns.
func serveHTTP(s *mcp.Server, addr string, sse bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	get := func(*http.Request) *mcp.Server { return s }
	var h http.Handler = mcp.NewStreamableHTTPHandler(get, nil)
	path := "/mcp"
	if sse {
		h, path = mcp.NewSSEHandler(get, nil), "/sse"
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	fmt.Fprintf(os.Stderr, "fixture server listening on http://localhost:%d%s\n", l.Addr().(*net.TCPAddr).Port, path)
	return http.Serve(l, mux)
}
