package sandbox

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/internal/enum"
)

// TransportKind is how the client speaks MCP to the server.
type TransportKind int

const (
	// TransportStdio: JSON-RPC lines over the server's stdin and stdout.
	TransportStdio TransportKind = iota + 1
	// TransportHTTP: the streamable HTTP transport, on a port the server
	// opens on the container's loopback.
	TransportHTTP
	// TransportSSE: the legacy HTTP+SSE transport (a GET stream, and POSTs
	// to the endpoint it names).
	TransportSSE
)

var transportNames = []string{TransportStdio: "stdio", TransportHTTP: "http", TransportSSE: "sse"}

func (k TransportKind) String() string { return enum.Name(transportNames, int(k)) }

// ParseTransportKind reads stdio, http or sse.
func ParseTransportKind(s string) (TransportKind, error) {
	v, err := enum.Parse(transportNames, "transport", s)
	return TransportKind(v), err
}

// Set and Type make TransportKind a command-line flag value.
func (k *TransportKind) Set(s string) (err error) { *k, err = ParseTransportKind(s); return err }
func (k TransportKind) Type() string              { return "transport" }

// OverHTTP reports whether the server is reached over HTTP (streamable
// or SSE).
func (k TransportKind) OverHTTP() bool { return k == TransportHTTP || k == TransportSSE }

// Transport is how the client reaches the server. The zero value is
// stdio.
type Transport struct {
	Kind TransportKind
	// Port is the TCP port the server listens on in the container; 0
	// (--port auto) reads it from what the server prints.
	Port int
	// Path is the endpoint's path (default DefaultHTTPPath, DefaultSSEPath).
	Path string
	// Headers are sent with every request (a bearer token, say). A Host
	// header replaces the one sent (default localhost:PORT).
	Headers http.Header
}

// The endpoint paths the SDKs serve by default.
const (
	DefaultHTTPPath = "/mcp"
	DefaultSSEPath  = "/sse"
)

// withDefaults fills in the kind and the path.
func (t Transport) WithDefaults() Transport {
	if t.Kind == 0 {
		t.Kind = TransportStdio
	}
	if t.Path == "" {
		switch t.Kind {
		case TransportHTTP:
			t.Path = DefaultHTTPPath
		case TransportSSE:
			t.Path = DefaultSSEPath
		}
	}
	return t
}

// Check says what is wrong with t for a server on network, if anything.
func (t Transport) Check(network NetworkMode) error {
	t = t.WithDefaults()
	switch t.Kind {
	case TransportStdio:
		if t.Port != 0 || t.Path != "" || len(t.Headers) > 0 {
			return fmt.Errorf("--port, --path and --header are for --transport http or sse")
		}
		return nil
	case TransportHTTP, TransportSSE:
	default:
		return fmt.Errorf("unknown transport %v", t.Kind)
	}
	if t.Port < 0 || t.Port > 65535 {
		return fmt.Errorf("port %d: want 1 to 65535, or auto", t.Port)
	}
	if network == NetworkSinkhole && slices.Contains(agent.SinkPorts(), t.Port) {
		return fmt.Errorf("port %d is the sinkhole's (it answers %s on the loopback): have the server listen on another port, or use --network none", t.Port, portList(agent.SinkPorts()))
	}
	if !strings.HasPrefix(t.Path, "/") {
		return fmt.Errorf("path %q: want an absolute path, /mcp", t.Path)
	}
	return nil
}

func portList(ports []int) string {
	var s []string
	for _, p := range ports {
		s = append(s, strconv.Itoa(p))
	}
	return strings.Join(s, ", ")
}

// ParseHeader reads `Name: value`, as curl's -H takes it.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("--header %q: want 'Name: value'", s)
	}
	return textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value), nil
}

// endpoint is the URL the client asks for: what a client on the same
// machine would use, the host localhost.
func (t Transport) endpoint(port int) string {
	return fmt.Sprintf("http://localhost:%d%s", port, t.Path)
}

// readyPoll is how often the runner tries the server's port while it
// waits for it to open; readyDial bounds one try.
const (
	readyPoll = 50 * time.Millisecond
	readyDial = time.Second
)
