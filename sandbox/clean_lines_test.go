package sandbox

import (
	"io"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestNoiseFilterCleansLines: a JSON line with invalid UTF-8, an unpaired
// surrogate or an escape that hides a value reaches the client cleaned;
// the transcript keeps it in a raw frame, redacted by default, exactly as
// received otherwise. Clean lines pass untouched and leave no raw frame.
func TestNoiseFilterCleansLines(t *testing.T) {
	clean := `{"jsonrpc":"2.0","id":1,"result":{"a":"\u003c"}}`
	dirty := "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"name\":\"x\xff\",\"v\":\"\\ud800\",\"k\":\"\\u0041KIATESTTESTTEST1234\"}}"
	tr := NewTranscript(1 << 20)
	n := &noiseFilter{maxKeep: 2, raw: tr.recordRaw}
	pr, pw := io.Pipe()
	go n.filter(strings.NewReader(clean+"\n"+dirty+"\n"), pw, newFrameGate(Bounds{MaxMessage: 1 << 20}))
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	want := clean + "\n" + `{"jsonrpc":"2.0","id":2,"result":{"name":"x\\xff","v":"\\ud800","k":"AKIATESTTESTTEST1234"}}` + "\n"
	if string(got) != want {
		t.Errorf("the client reads\n%s\nwant\n%s", got, want)
	}
	frames, _ := tr.Frames()
	if len(frames) != 1 || frames[0].Dir != "raw" || string(frames[0].Raw) != dirty || frames[0].Message != nil {
		t.Fatalf("frames %+v, want one raw frame with the line as received", frames)
	}
	ps := []report.Placeholder{{Value: "AKIATESTTESTTEST1234", Role: "<aws-access-key-id>"}}
	red := frames[0].Redacted(ps)
	if want := "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"name\":\"x\xff\",\"v\":\"\\\\ud800\",\"k\":\"<aws-access-key-id>\"}}"; string(red.Raw) != want {
		t.Errorf("redacted raw %q\nwant         %q", red.Raw, want)
	}
}

// TestNoiseFilterBoundsTheCleanLine: escaping grows a line (\xNN for one
// byte); a line under the message bound whose clean form is over it is
// refused, not passed to a client that would choke on it.
func TestNoiseFilterBoundsTheCleanLine(t *testing.T) {
	line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("\xff", 1000) + `"}}`
	gate := newFrameGate(Bounds{MaxMessage: 2000})
	n := &noiseFilter{maxKeep: 2}
	pr, pw := io.Pipe()
	go n.filter(strings.NewReader(line+"\n"), pw, gate)
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("the client read %d bytes, want none", len(got))
	}
	if kept, all, _ := gate.refusals(); all != 1 || len(kept) != 1 || kept[0].Kind != BoundMessageSize || kept[0].Bytes <= 2000 {
		t.Errorf("refusals %+v (%d), want one of the message size, over the bound", kept, all)
	}
}
