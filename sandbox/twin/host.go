package twin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/sandbox/scriptmodel"
)

// Main runs the twin mode args[0] names (HostArg or StdioArg) and returns
// the exit code.
func Main(args []string) int {
	if len(args) == 0 || !Is(args[0]) {
		fmt.Fprintln(os.Stderr, "twin: no mode")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch args[0] {
	case StdioArg:
		err = relay(ctx, os.Stdin, os.Stdout)
	case ProbeArg:
		pctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
		err = callAlpha(pctx, &mcp.StreamableClientTransport{Endpoint: MCPURL(), MaxRetries: -1})
		cancel()
	default:
		err = host(ctx, os.Stdin, os.Stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "twin: %v\n", err)
		return 1
	}
	return 0
}

// relay joins its stdio (the client's pipes) to the host's socket.
func relay(ctx context.Context, in io.Reader, out io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", SocketName)
	if err != nil {
		return fmt.Errorf("reaching the twin: %w", err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(c, in)
		if uc, ok := c.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
	}()
	go func() {
		io.Copy(out, c)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// Host is the twin host's state.
type Host struct {
	ledger *ledger
	model  *scriptmodel.Endpoint
	self   string // this executable, for the stdio relay
}

// host serves the twin to clients and the control tools on in/out (the
// runner's channel) until in ends.
func host(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	// No process of the client's uid may read this one's memory or open
	// its stdio (the runner's channel) through /proc.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := os.MkdirAll(MarkerDir, 0o755); err != nil {
		return fmt.Errorf("making the marker directory: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the twin's own path: %w", err)
	}
	h := &Host{ledger: newLedger(MarkerDir), model: scriptmodel.New(scriptmodel.Options{}), self: self}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := h.listen(ctx); err != nil {
		return err
	}
	return h.control().Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}

// listen starts the HTTP MCP server, the model endpoint and the relay's
// socket.
func (h *Host) listen(ctx context.Context) error {
	mcpL, err := net.Listen("tcp", net.JoinHostPort(Loopback, strconv.Itoa(MCPPort)))
	if err != nil {
		return fmt.Errorf("listening for MCP over HTTP: %w", err)
	}
	modelL, err := net.Listen("tcp", net.JoinHostPort(Loopback, strconv.Itoa(ModelPort)))
	if err != nil {
		return fmt.Errorf("listening for the model: %w", err)
	}
	sockL, err := net.Listen("unix", SocketName)
	if err != nil {
		return fmt.Errorf("listening for the stdio relay: %w", err)
	}
	httpSrv := clientServer(h.ledger, ConnHTTP)
	mux := http.NewServeMux()
	mux.Handle(MCPPath, readingHandler(h.ledger, maxBody, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return httpSrv }, nil)))
	servers := []*http.Server{{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, {Handler: h.model, ReadHeaderTimeout: 10 * time.Second}}
	go servers[0].Serve(mcpL)
	go servers[1].Serve(modelL)
	stdioSrv := clientServer(h.ledger, ConnStdio)
	go func() {
		for {
			c, err := sockL.Accept()
			if err != nil {
				return
			}
			go serveStdio(ctx, stdioSrv, h.ledger, c, maxLine)
		}
	}()
	go func() {
		<-ctx.Done()
		for _, s := range servers {
			s.Close()
		}
		sockL.Close()
	}()
	return nil
}

// serveStdio serves srv on the relay's connection c until it ends, each
// line read by the ledger first (see read.go).
func serveStdio(ctx context.Context, srv *mcp.Server, l *ledger, c net.Conn, max int) {
	defer c.Close()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: newLineReader(l, c, max), Writer: c}, nil)
	if err != nil {
		return
	}
	ss.Wait()
}

// control is the runner's server: the control tools. Their results are
// structured content with no output schema: the runner decodes them.
func (h *Host) control() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpsandbox-twin-control", Version: "1.0.0"}, nil)
	addControl(s, ToolSelfTest, "The harness's own calls, as a client.", h.selfTest)
	addControl(s, ToolPrepare, "The client phase: nonce, tool, HOME, the adapter's files.",
		func(_ context.Context, in PrepareIn) PrepareOut { return h.prepare(in) })
	addControl(s, ToolRun, "Runs the client.", runClient)
	addControl(s, ToolLedger, "The ledger and the model's turns.",
		func(context.Context, struct{}) LedgerOut { return h.ledgerOut() })
	return s
}

func addControl[In, Out any](s *mcp.Server, name, desc string, f func(context.Context, In) Out) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in In
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments: " + err.Error()}}}, nil
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: f(ctx, in)}, nil
		})
}
