package main

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// transportFlags adds --transport, --port, --path and --header, and
// returns what reads them after parsing, for the server's network.
func transportFlags(fs *pflag.FlagSet) func(sandbox.NetworkMode) (sandbox.Transport, error) {
	kind := sandbox.TransportStdio
	fs.Var(&kind, "transport", "how the server is reached: stdio, http (streamable HTTP) or sse (the legacy HTTP+SSE), on a port it opens on the container's loopback (see --port)")
	port := fs.String("port", "", "with --transport http or sse: the port the server listens on in the container, or auto to read it from what the server prints")
	path := fs.String("path", "", "with --transport http or sse: the endpoint's path (default "+sandbox.DefaultHTTPPath+" for http, "+sandbox.DefaultSSEPath+" for sse)")
	headers := fs.StringArray("header", nil, "'Name: value' sent with every HTTP request, a bearer token say (repeatable; with --transport http or sse)")
	return func(network sandbox.NetworkMode) (sandbox.Transport, error) {
		t := sandbox.Transport{Kind: kind, Path: *path}
		if kind.OverHTTP() {
			switch *port {
			case "":
				return t, usageError{fmt.Sprintf("--transport %s needs --port PORT or --port auto", kind)}
			case "auto":
			default:
				p, err := strconv.Atoi(*port)
				if err != nil || p < 1 || p > 65535 {
					return t, usageError{fmt.Sprintf("--port %q: want 1 to 65535, or auto", *port)}
				}
				t.Port = p
			}
		} else if *port != "" {
			return t, usageError{"--port is for --transport http or sse"}
		}
		for _, h := range *headers {
			name, value, err := sandbox.ParseHeader(h)
			if err != nil {
				return t, usageError{err.Error()}
			}
			if t.Headers == nil {
				t.Headers = http.Header{}
			}
			t.Headers.Add(name, value)
		}
		if err := t.Check(network); err != nil {
			return t, usageError{fmt.Sprintf("--transport %s: %v", kind, err)}
		}
		return t, nil
	}
}
