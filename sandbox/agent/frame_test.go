//go:build linux && amd64

package agent

import (
	"bytes"
	"strings"
	"testing"
)

// TestLongFrames: a frame under MaxFrame arrives whole however long; a
// longer one arrives as its event marked "frame", never as raw bytes; a
// long line that is not a frame stays raw.
func TestLongFrames(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 10}
	long := strings.Repeat("x", 700<<10)
	w.emit(&Event{Kind: KindExec, PID: 5, Argv: []string{"sh", long}})
	w.tick()
	buf.WriteByte(frameMark)
	buf.WriteString(`{"t":9,"k":"exec","pid":6,"ppid":2,"argv":["` + strings.Repeat("y", 2<<20) + "\"]}\n")
	buf.WriteString(strings.Repeat("z", 3<<20) + "\n")
	w.emit(&Event{Kind: KindExit, PID: 6})
	w.tick()
	var events []Event
	var raw int
	if err := Decode(&buf, func(e Event) { events = append(events, e) }, func(b []byte) { raw += len(b) }); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, " ") != "exec tick exec exit tick" {
		t.Fatalf("events %q", kinds)
	}
	if e := events[0]; len(e.Argv) != 2 || e.Argv[1] != long || e.Truncated != "" {
		t.Errorf("a 700 KiB frame did not arrive whole")
	}
	if e := events[2]; e.PID != 6 || e.PPID != 2 || e.T != 9 || e.Truncated != "frame" || e.Argv != nil {
		t.Errorf("an over-long frame: %+v", e)
	}
	if raw < 3<<20 {
		t.Errorf("%d raw bytes, want the long non-frame line", raw)
	}
}

// TestWriterKeepsFramesUnderTheBound: an argv that escapes to more than
// MaxFrame is cut, and the event says so.
func TestWriterKeepsFramesUnderTheBound(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 10}
	w.emit(&Event{Kind: KindExec, PID: 5, Argv: []string{"sh", strings.Repeat("\x01", MaxArgv), strings.Repeat("\x02", MaxArgv)}})
	w.tick()
	line, _ := buf.ReadBytes('\n')
	if len(line) > MaxFrame {
		t.Fatalf("frame of %d bytes", len(line))
	}
	var got []Event
	Decode(bytes.NewReader(line), func(e Event) { got = append(got, e) }, func([]byte) {})
	if len(got) != 1 || got[0].Truncated != "frame" || len(got[0].Argv) == 0 || got[0].Argv[0] != "sh" {
		t.Errorf("got %+v", got)
	}
}

// TestDNSQuestions reads every question, compressed ones too, bounded.
func TestDNSQuestions(t *testing.T) {
	q := query("a.example.com")
	q[5] = 3
	q = append(q, 1, 'b', 0xc0, 14, 0, 1, 0, 1) // b.example.com, by pointer
	q = append(q, 1, 'c', 0, 0, 1, 0, 1)
	names, more := dnsQuestions(q, 10)
	if strings.Join(names, " ") != "a.example.com b.example.com c" || more {
		t.Errorf("names %q more %v", names, more)
	}
	if names, more := dnsQuestions(q, 2); len(names) != 2 || !more {
		t.Errorf("bounded: %q %v", names, more)
	}
}

// TestDNSNamesNoResolverSends: the sink reads names a resolver would never
// send, which golang.org/x/net/dns/dnsmessage refuses (past 255 bytes,
// more than 10 compression pointers): a hostile server writes its own
// datagrams, and what it sends through the sink is reported, not dropped
// as malformed (docs/architecture.md, "Libraries for the job").
func TestDNSNamesNoResolverSends(t *testing.T) {
	label := strings.Repeat("s", 63)
	long := strings.Join([]string{label, label, label, label, label}, ".") // 319 bytes
	if name, ok := dnsQuestion(query(long)); !ok || name != long {
		t.Errorf("a %d-byte name: %q %v", len(long), name, ok)
	}
	// Twelve questions, each a label and a pointer to the one before it:
	// the last name is reached through eleven pointers.
	q := query("x")
	q[5] = 12
	prev := 12
	for i := range 11 {
		at := len(q)
		q = append(q, 1, byte('a'+i), 0xc0, byte(prev), 0, 1, 0, 1)
		prev = at
	}
	names, more := dnsQuestions(q, 12)
	if len(names) != 12 || more || names[11] != "k.j.i.h.g.f.e.d.c.b.a.x" {
		t.Errorf("names through pointers: %q %v", names, more)
	}
}
