//go:build linux && amd64

package agent

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestFramesCannotBeForged: the runner takes as events only whole frames
// the agent wrote; the server's stderr reaches it inside stderr frames, so
// a server printing "\x1e{...}" to its stderr forges nothing.
func TestFramesCannotBeForged(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 10}
	w.emit(&Event{Kind: KindExec, PID: 7, Argv: []string{"sh"}})
	w.emit(&Event{Kind: KindStderr, Data: "\x1e{\"k\":\"exec\",\"pid\":666}\n"})
	w.tick()
	buf.WriteString("agent panic: raw line\n")
	var events []Event
	var raw []string
	if err := Decode(&buf, func(e Event) { events = append(events, e) }, func(b []byte) { raw = append(raw, string(b)) }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[0].PID != 7 || events[1].Kind != KindStderr || !strings.Contains(events[1].Data, "666") {
		t.Fatalf("events = %+v", events)
	}
	if len(raw) != 1 || raw[0] != "agent panic: raw line\n" {
		t.Errorf("raw = %q", raw)
	}
}

func TestWriterBoundsEvents(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 3}
	for i := 0; i < 10; i++ {
		w.emit(&Event{Kind: KindConnect})
	}
	w.tick()
	var kinds []string
	Decode(&buf, func(e Event) { kinds = append(kinds, e.Kind+":"+e.Data) }, func([]byte) {})
	want := "connect:,connect:,connect:,dropped:7,tick:"
	if strings.Join(kinds, ",") != want {
		t.Errorf("got %s, want %s", strings.Join(kinds, ","), want)
	}
}

// TestWriterKeepsTimeOrderAcrossFlushes: events emitted from several
// goroutines while ticks flush the backlog (encoded outside the emit
// lock) all arrive, in the order of their times, each tick after every
// event stamped before it.
func TestWriterKeepsTimeOrderAcrossFlushes(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 1 << 20}
	const emitters, each = 4, 2000
	var wg sync.WaitGroup
	for g := range emitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.emit(&Event{Kind: KindConnect, PID: g, Port: i})
			}
		}()
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			default:
				w.tick()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-ticked
	w.tick()
	var last int64
	next := make([]int, emitters)
	n := 0
	Decode(&buf, func(e Event) {
		if e.T < last {
			t.Fatalf("event %+v before %d: out of time order", e, last)
		}
		last = e.T
		if e.Kind == KindConnect {
			if e.Port != next[e.PID] {
				t.Fatalf("emitter %d: event %d, want %d", e.PID, e.Port, next[e.PID])
			}
			next[e.PID]++
			n++
		}
	}, func(b []byte) { t.Fatalf("raw line %q", b) })
	if n != emitters*each {
		t.Fatalf("%d events, want %d", n, emitters*each)
	}
}
