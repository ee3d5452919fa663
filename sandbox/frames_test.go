package sandbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// scanAll scans line in chunks of n bytes, as the filter reads it.
func scanAll(line string, n int) *frameScan {
	s := &frameScan{}
	for len(line) > 0 {
		k := min(n, len(line))
		s.write([]byte(line[:k]))
		line = line[k:]
	}
	return s
}

// TestFrameScanFindsIDAndHashesResult: the scan finds the top-level id
// wherever it is (after a large result too, under an escaped key), tells
// a response from a request, and hashes the result's raw bytes exactly as
// a JSON decoder keeps them.
func TestFrameScanFindsIDAndHashesResult(t *testing.T) {
	result := `{"content":[{"type":"text","text":"a \"quoted\" } ] , text"}], "nested" : { "a" : [ 1 , 2 ] } }`
	for _, c := range []struct {
		line, id string
		response bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":` + result + `}`, "7", true},
		{`{ "result" : ` + result + ` , "jsonrpc":"2.0", "id" : "x\"y" }`, `"x\"y"`, true},
		{`{"result":` + result + `,"\u0069d":12}`, "12", true},
		{`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"id":99}}`, "3", false},
	} {
		for _, chunk := range []int{1, 7, 1 << 20} {
			s := scanAll(c.line, chunk)
			if got := s.idKey(); got != c.id {
				t.Errorf("%s (chunks of %d): id %q, want %q", c.line, chunk, got, c.id)
			}
			if c.response != (s.hasResult && !s.hasMethod) {
				t.Errorf("%s: response %v", c.line, !c.response)
			}
			if !c.response {
				continue
			}
			var m struct{ Result json.RawMessage }
			if err := json.Unmarshal([]byte(c.line), &m); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(m.Result)
			if d := s.digest(); d.Bytes != int64(len(m.Result)) || d.Sha256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s (chunks of %d): digest %+v, want %d bytes %x", c.line, chunk, d, len(m.Result), sum)
			}
		}
	}
}

func TestFrameScanDepth(t *testing.T) {
	deep := `{"id":1,"result":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`
	if s := scanAll(deep, 3); s.maxDepth != 51 || s.idKey() != "1" {
		t.Errorf("depth %d id %q, want 51 and 1", s.maxDepth, s.idKey())
	}
	// Brackets in strings are no nesting.
	if s := scanAll(`{"id":1,"result":"[[[[{{{{"}`, 1); s.maxDepth != 1 {
		t.Errorf("depth %d, want 1", s.maxDepth)
	}
}

// TestFilterRefusesOverBound: a response over the size or the nesting
// bound reaches the client as an error for the same id (when the client
// sent that id), the session's
// stream goes on, and the gate says what was refused and why; a
// notification over the bound is dropped and counted.
func TestFilterRefusesOverBound(t *testing.T) {
	big := `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}]},"id":4}`
	deep := `{"jsonrpc":"2.0","id":5,"result":{"structuredContent":` + strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40) + `}}`
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("y", 5000) + `"}}`
	// An answer to a request nobody sent gets no answer in its place.
	stray := `{"jsonrpc":"2.0","id":99,"result":"` + strings.Repeat("z", 5000) + `"}`
	ok := `{"jsonrpc":"2.0","id":6,"result":{}}`
	in := strings.Join([]string{big, deep, note, stray, ok}, "\n") + "\n"
	gate := newFrameGate(Bounds{MaxMessage: 1024, MaxDepth: 16})
	gate.sent("tools/call", int64(4))
	gate.sent("tools/list", int64(5))
	pr, pw := io.Pipe()
	n := &noiseFilter{maxKeep: 2}
	go n.filter(strings.NewReader(in), pw, gate)
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 || lines[2] != ok {
		t.Fatalf("passed %q", lines)
	}
	for i, id := range []int{4, 5} {
		var m struct {
			ID    int
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil || m.ID != id || m.Error.Code != boundErrorCode {
			t.Errorf("line %d: %q (%v), want the bound error for id %d", i, lines[i], err, id)
		}
	}
	_, r := gate.take("tools/call")
	if r == nil || r.Kind != BoundMessageSize || r.Bytes != int64(len(big)) || r.Result.Bytes == 0 || !strings.Contains(r.String(), "1024 bytes") {
		t.Errorf("refusal of call 4: %+v", r)
	}
	all, total, other := gate.refusals()
	if total != 4 || other != 2 || len(all) != 4 || all[3].Answered || all[1].Kind != BoundDepth || all[1].Depth != 42 || all[2].Answered || all[2].Method != "notifications/message" {
		t.Errorf("refusals %+v", all)
	}
	if count, _ := n.snapshot(); count != 0 {
		t.Errorf("%d noise lines, want none", count)
	}
}

// TestBoundsDefaults: zero fields take the defaults, and the nesting bound
// stays under the SDK's, past which the SDK would close the session.
func TestBoundsDefaults(t *testing.T) {
	if b := (Bounds{}).WithDefaults(); b != DefaultBounds() {
		t.Errorf("%+v, want %+v", b, DefaultBounds())
	}
	if b := (Bounds{MaxDepth: 5000}).WithDefaults(); b.MaxDepth >= sdkMaxDepth {
		t.Errorf("depth bound %d, not under the SDK's %d", b.MaxDepth, sdkMaxDepth)
	}
}

// TestBoundTool: over the schema bound a description is cut (valid
// UTF-8), a schema replaced by one that says what it was and accepts
// nothing; under it nothing changes.
func TestBoundTool(t *testing.T) {
	small := report.Tool{Name: "t", Description: "short", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`null`)}
	if c := small; boundTool(&c, 64) || c.Description != small.Description || string(c.InputSchema) != string(small.InputSchema) {
		t.Errorf("a small tool changed: %+v", c)
	}
	big := report.Tool{Name: "t", Description: strings.Repeat("é", 100), InputSchema: json.RawMessage(`{"description":"` + strings.Repeat("x", 100) + `"}`)}
	if !boundTool(&big, 64) || len(big.Description) > 64+len("…") || !utf8.ValidString(big.Description) {
		t.Errorf("description %q", big.Description)
	}
	var schema map[string]any
	if err := json.Unmarshal(big.InputSchema, &schema); err != nil || schema["not"] == nil || !strings.Contains(schema["$comment"].(string), "inputSchema (118 bytes, sha256 ") {
		t.Errorf("inputSchema %s (%v)", big.InputSchema, err)
	}
}

// TestFrameScanKeepsTheLastID: an id given twice is the last, as every
// reader (and the judge's re-encoding) reads it, not the two run together.
func TestFrameScanKeepsTheLastID(t *testing.T) {
	var s frameScan
	s.write([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","method":"b","id":23,"result":{}}`))
	if got := s.idKey(); got != "23" {
		t.Errorf("id %q, want 23", got)
	}
	if string(s.method) != `"b"` {
		t.Errorf("method %s, want \"b\"", s.method)
	}
}
