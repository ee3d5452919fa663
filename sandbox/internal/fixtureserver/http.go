package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP serves s over streamable HTTP (at /mcp) or, with sse, the
// legacy HTTP+SSE transport (at /sse), on addr (":0": a port the kernel
// picks), and prints where, as real servers do: the runner's --port auto
// reads it. It never returns.
//
// want, "Name: value", is a header every request must carry (a bearer
// token, say): without it the answer is 401. An Origin header is refused
// (403): a local client sends none.
func serveHTTP(s *mcp.Server, addr string, sse bool, want string) error {
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
	name, value, _ := strings.Cut(want, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	mux := http.NewServeMux()
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name != "" && r.Header.Get(name) != value {
			http.Error(w, "missing "+name, http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Origin") != "" {
			http.Error(w, "cross-origin request", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	fmt.Fprintf(os.Stderr, "fixture server listening on http://localhost:%d%s\n", l.Addr().(*net.TCPAddr).Port, path)
	return http.Serve(l, mux)
}
