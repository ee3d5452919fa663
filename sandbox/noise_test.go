package sandbox

import (
	"io"
	"strings"
	"testing"
)

func TestNoiseFilterPassesOnlyJSONLines(t *testing.T) {
	in := "banner line\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\x00\xffjunk\n{\"half\":\n  \n[1,2]\n" + strings.Repeat("x", 100) + "\n{\"long\":\"" + strings.Repeat("y", 100) + "\"}\n"
	pr, pw := io.Pipe()
	n := &noiseFilter{maxKeep: 2}
	gate := newFrameGate(Bounds{MaxMessage: 64})
	go n.filter(strings.NewReader(in), pw, gate)
	out, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n[1,2]\n"; string(out) != want {
		t.Errorf("passed %q, want %q", out, want)
	}
	count, sample := n.snapshot()
	// The over-long JSON line is no noise: a message refused over the bound.
	if r, _, _ := gate.refusals(); len(r) != 1 || r[0].Kind != BoundMessageSize || r[0].Answered {
		t.Errorf("refusals %+v, want the long JSON line's", r)
	}
	if count != 4 || len(sample) != 2 || sample[0] != `"banner line"` || !strings.Contains(sample[1], `\x00`) {
		t.Errorf("noise count %d sample %q", count, sample)
	}
}
