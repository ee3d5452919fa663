package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRawHTTPRelaysBothWays: a server over streamable HTTP, handed out as
// lines (rawHTTP) to a Go SDK client on them: the client lists and calls;
// the server's request during a call (sampling) reaches the client, whose
// answer is POSTed back; a notification the server sends outside any
// request (tools/list_changed) reaches it over the standalone stream; the
// client's EOF ends the lines once nothing is in flight.
func TestRawHTTPRelaysBothWays(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi?"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	ctx := context.Background()
	s := newSession(nil, SessionOptions{Transport: Transport{Kind: TransportHTTP}})
	s.rep.Server.Endpoint = hs.URL + DefaultHTTPPath
	if err := s.rawHTTP(ctx, ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + DefaultHTTPPath}); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: s.stdio.Reader, Writer: s.stdio.Writer}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list: %+v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if err != nil || res.IsError {
		t.Fatalf("ask: %+v, %v", res, err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "yes" {
		t.Errorf("ask answered %+v, want the client's sampling answer", res.Content[0])
	}
	// Outside any request: only the standalone stream carries it. Added
	// until it arrives: the stream may not be open yet when the first is
	// sent (the server drops what it cannot deliver).
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("no tools/list_changed over the standalone stream")
		}
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("late%d", i), InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.stdio.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
}

// TestRawHTTPHostile: a call the server holds does not hold the others
// (each request is sent on its own); the client's EOF with that call
// still unanswered leaves teardown free to end it; a server that refuses
// every request (401) has each answered with its error, so no client
// waits on it.
func TestRawHTTPHostile(t *testing.T) {
	ctx := context.Background()
	t.Run("held call", func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		release := make(chan struct{})
		mcp.AddTool(srv, &mcp.Tool{Name: "hang"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, nil, errors.New("released")
		})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		defer hs.Close()
		// The in-process server's handler outlives the session: let go
		// before the server closes.
		defer close(release)
		s := newSession(nil, SessionOptions{Transport: Transport{Kind: TransportHTTP}})
		s.rep.Server.Endpoint = hs.URL
		if err := s.rawHTTP(ctx, ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: s.stdio.Reader, Writer: s.stdio.Writer}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hung := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hang"})
			hung <- err
		}()
		for range 3 {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list while a call is held: %v", err)
			}
		}
		// The client's EOF, then teardown: the held call ends with the
		// connection, and nothing is left waiting.
		s.stdio.Writer.Close()
		if err := s.stdio.Close(); err != nil {
			t.Logf("closing: %v", err)
		}
		cs.Close()
		<-hung
	})
	t.Run("401", func(t *testing.T) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no token", http.StatusUnauthorized)
		}))
		defer hs.Close()
		s := newSession(nil, SessionOptions{Transport: Transport{Kind: TransportHTTP}})
		s.rep.Server.Endpoint = hs.URL
		if err := s.rawHTTP(ctx, ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}); err != nil {
			t.Fatal(err)
		}
		defer s.stdio.Close()
		_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: s.stdio.Reader, Writer: s.stdio.Writer}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil || !strings.Contains(err.Error(), "could not be sent to the server over HTTP") || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("connecting through a server that refuses everything: %v, want the refusal", err)
		}
	})
}

// TestRawHTTPAnswerAfterEOF: the client's EOF with a call in flight: its
// answer, when it comes, is still read, and then the lines end (as a
// server over stdio answers what it has, then ends its stdout).
func TestRawHTTPAnswerAfterEOF(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	s := newSession(nil, SessionOptions{Transport: Transport{Kind: TransportHTTP}})
	s.rep.Server.Endpoint = hs.URL
	if err := s.rawHTTP(ctx, ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}); err != nil {
		t.Fatal(err)
	}
	defer s.stdio.Close()
	lines := bufio.NewScanner(s.stdio.Reader)
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(s.stdio.Writer, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1`) {
		t.Fatalf("initialize: %q, %v", lines.Text(), lines.Err())
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	s.stdio.Writer.Close()
	close(release)
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	if len(got) == 0 || !strings.Contains(got[len(got)-1], `"id":2`) || !strings.Contains(got[len(got)-1], "done") {
		t.Errorf("after the client's EOF read %q, want the call's answer, then the end", got)
	}
}
