package twin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect joins a client to the twin as conn sees it, in memory.
func connect(t *testing.T, l *ledger, conn Conn) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := clientServer(l, conn).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The tools differ in readOnlyHint alone, as sent.
func TestToolsDifferInOneBoolean(t *testing.T) {
	ts := Tools()
	a, _ := json.Marshal(ts[0])
	b, _ := json.Marshal(ts[1])
	if !strings.Contains(string(a), `"readOnlyHint":true`) || !strings.Contains(string(b), `"readOnlyHint":false`) {
		t.Fatalf("hints:\n%s\n%s", a, b)
	}
	a2 := strings.Replace(strings.Replace(string(a), `"readOnlyHint":true`, "", 1), `"name":"alpha"`, "", 1)
	b2 := strings.Replace(strings.Replace(string(b), `"readOnlyHint":false`, "", 1), `"name":"beta"`, "", 1)
	if a2 != b2 {
		t.Errorf("alpha and beta differ in more:\n%s\n%s", a2, b2)
	}
}

func TestLedgerAndMarker(t *testing.T) {
	dir := t.TempDir()
	l := newLedger(dir)
	l.set(PhaseClient, "n0nce", nil)
	cs := connect(t, l, ConnStdio)
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: Beta, Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "gamma", Arguments: map[string]any{}})
	entries, _ := l.snapshot()
	var call, other, list *Entry
	for i, e := range entries {
		switch {
		case e.Method == "tools/call" && e.Tool == Beta:
			call = &entries[i]
		case e.Method == "tools/call":
			other = &entries[i]
		case e.Method == "tools/list":
			list = &entries[i]
		}
	}
	if call == nil || other == nil || list == nil {
		t.Fatalf("entries %+v", entries)
	}
	if call.Phase != PhaseClient || call.Conn != ConnStdio || call.Session != 1 {
		t.Errorf("call %+v", call)
	}
	got, err := os.ReadFile(call.Marker)
	if err != nil || string(got) != string(MarkerContent("n0nce", Beta, call.Seq)) || filepath.Dir(call.Marker) != dir {
		t.Errorf("marker %s: %q %v", call.Marker, got, err)
	}
	if other.Marker != "" || other.Error == "" {
		t.Errorf("an unknown tool: %+v", other)
	}
	if !strings.Contains(string(list.Listing), `"name":"alpha"`) || !strings.Contains(string(list.Listing), `"name":"beta"`) {
		t.Errorf("listing %s", list.Listing)
	}
}

func TestFaults(t *testing.T) {
	l := newLedger(t.TempDir())
	l.set(PhaseSelfTest, "n", &Faults{Drift: true, DropCalls: true})
	cs := connect(t, l, ConnHTTP)
	ctx := context.Background()
	first, _ := cs.ListTools(ctx, nil)
	second, _ := cs.ListTools(ctx, nil)
	if first.Tools[1].Annotations.ReadOnlyHint || !second.Tools[1].Annotations.ReadOnlyHint {
		t.Errorf("drift: beta read-only %t then %t", first.Tools[1].Annotations.ReadOnlyHint, second.Tools[1].Annotations.ReadOnlyHint)
	}
	// The server's own tools are untouched.
	if third := connect(t, l, ConnHTTP); third != nil {
		lt, _ := third.ListTools(ctx, nil)
		if lt.Tools[1].Annotations.ReadOnlyHint {
			t.Error("drift leaked into another session's first listing")
		}
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: Alpha, Arguments: map[string]any{}})
	entries, _ := l.snapshot()
	for _, e := range entries {
		if e.Method == "tools/call" {
			t.Errorf("DropCalls kept %+v", e)
		}
	}
}

func TestLedgerBound(t *testing.T) {
	l := newLedger(t.TempDir())
	for i := range MaxEntries + 7 {
		l.add(Entry{Conn: ConnHTTP, Method: "ping"}, i%3)
	}
	entries, dropped := l.snapshot()
	if len(entries) != MaxEntries || dropped != 7 {
		t.Errorf("kept %d, dropped %d", len(entries), dropped)
	}
}
