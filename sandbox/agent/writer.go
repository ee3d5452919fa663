package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// writer serialises frames and stamps each with the time it is emitted,
// so that the stream is in time order and a tick proves that everything
// before it has been sent. Events are kept as they are and encoded and
// written at each tick (the runner closes a phase only on a tick), when
// the backlog is large, and at once for the agent's own words (start,
// error): one write per frame would cost the traced server a context
// switch each, and encoding at the emit would keep a stopped tracee
// waiting while the tracer encodes.
type writer struct {
	// wmu orders the writes; it is taken before mu, which guards the
	// backlog and is held only to stamp and append, never to encode.
	wmu      sync.Mutex
	mu       sync.Mutex
	w        io.Writer
	pending  []Event
	spare    []Event // the last batch's array, for the next backlog
	size     int     // the backlog's bytes, roughly
	n, max   int
	dropped  int
	reported int
	buf      []byte // reused by the flusher (under wmu)
}

// flushAt is the backlog size that is written without waiting for a tick.
const flushAt = 64 << 10

func (w *writer) emit(e *Event) {
	w.mu.Lock()
	// Ticks, stderr and quiet readings are not the server's effects: a
	// flood of them (QuietSignal, FlushSignal) must not take their room.
	if e.Kind != KindTick && e.Kind != KindStderr && e.Kind != KindQuiet {
		if w.n >= w.max {
			w.dropped++
			w.mu.Unlock()
			return
		}
		w.n++
	}
	e.T = Now()
	w.pending = append(w.pending, *e)
	w.size += 128 + len(e.Data) + len(e.Payload)
	for _, a := range e.Argv {
		w.size += len(a) + 4
	}
	now := w.size >= flushAt || e.Kind == KindStart || e.Kind == KindError
	w.mu.Unlock()
	if now {
		w.flush(false)
	}
}

// tick sends how many events were dropped since it last said, then a
// tick, and writes everything pending.
func (w *writer) tick() { w.flush(true) }

// flush encodes and writes the backlog, with a tick after it when asked.
// The backlog is taken under mu and encoded outside it, so emitters never
// wait for the encoding; wmu keeps the batches in order.
func (w *writer) flush(tick bool) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	batch := w.pending
	w.pending, w.spare, w.size = w.spare, nil, 0
	if tick {
		if d := w.dropped - w.reported; d > 0 {
			batch = append(batch, Event{T: Now(), Kind: KindDropped, Data: fmt.Sprint(d)})
			w.reported = w.dropped
		}
		batch = append(batch, Event{T: Now(), Kind: KindTick})
	}
	w.mu.Unlock()
	buf := w.buf[:0]
	for i := range batch {
		buf = appendFrame(buf, &batch[i])
	}
	if len(buf) > 0 {
		w.w.Write(buf)
	}
	if cap(buf) <= 1<<20 {
		w.buf = buf // kept for the next batch, unless a huge one grew it
	}
	if cap(batch) <= 4096 {
		clear(batch) // its argv and payloads are not kept alive
		w.mu.Lock()
		w.spare = batch[:0]
		w.mu.Unlock()
	}
}

func (w *writer) errorf(format string, args ...any) {
	w.emit(&Event{Kind: KindError, Data: fmt.Sprintf(format, args...)})
}

// appendFrame appends e as one frame of at most MaxFrame bytes: an event
// that would not fit (an argv of control characters, each escaped to six
// bytes) loses what does not fit and is marked "frame".
func appendFrame(buf []byte, e *Event) []byte {
	b, err := json.Marshal(e)
	if err == nil && len(b)+2 > MaxFrame {
		c := *e
		c.Argv, c.Payload, c.Data = fitArgv(e.Argv, MaxFrame/2), nil, ""
		c.Truncated = addTrunc(c.Truncated, "frame")
		b, err = json.Marshal(&c)
	}
	if err != nil {
		return buf // an Event always encodes
	}
	buf = append(buf, frameMark)
	buf = append(buf, b...)
	return append(buf, '\n')
}

// fitArgv keeps the first arguments whose encoding fits in n bytes.
func fitArgv(argv []string, n int) []string {
	var out []string
	for _, a := range argv {
		b, _ := json.Marshal(a)
		if n -= len(b) + 1; n < 0 {
			break
		}
		out = append(out, a)
	}
	return out
}

// addTrunc adds what to a Truncated list.
func addTrunc(list, what string) string {
	if list == "" {
		return what
	}
	for _, w := range strings.Split(list, ",") {
		if w == what {
			return list
		}
	}
	return list + "," + what
}

// encode writes one frame.
func encode(w io.Writer, e *Event) error {
	_, err := w.Write(appendFrame(nil, e))
	return err
}
