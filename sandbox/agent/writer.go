package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// writer serialises frames and stamps each with the time it is written,
// so that the stream is in time order and a tick proves that everything
// before it has been sent. Frames are buffered and written at each tick
// (the runner closes a phase only on a tick), when the buffer fills, and
// at once for the agent's own words (start, error); one write per frame
// would cost the traced server a context switch each.
type writer struct {
	mu       sync.Mutex
	w        io.Writer
	buf      []byte
	n, max   int
	dropped  int
	reported int
}

// flushAt is the buffered size that is written without waiting for a tick.
const flushAt = 64 << 10

func (w *writer) emit(e *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Kind != KindTick && e.Kind != KindStderr {
		if w.n >= w.max {
			w.dropped++
			return
		}
		w.n++
	}
	e.T = Now()
	w.buf = appendFrame(w.buf, e)
	if len(w.buf) >= flushAt || e.Kind == KindStart || e.Kind == KindError {
		w.flushLocked()
	}
}

// tick sends how many events were dropped since it last said, then a
// tick, and writes everything buffered.
func (w *writer) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.dropped - w.reported; d > 0 {
		w.buf = appendFrame(w.buf, &Event{T: Now(), Kind: KindDropped, Data: fmt.Sprint(d)})
		w.reported = w.dropped
	}
	w.buf = appendFrame(w.buf, &Event{T: Now(), Kind: KindTick})
	w.flushLocked()
}

func (w *writer) flushLocked() {
	if len(w.buf) > 0 {
		w.w.Write(w.buf)
		w.buf = w.buf[:0]
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
