package sandbox

import "sync"

// tailBuffer keeps the first headMax and the last max bytes written to it
// and counts them all, so that a server flooding stderr costs bounded
// memory and the lines that say why it failed (which come first) are
// kept with its last words.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	head  []byte
	total int64
}

// stderrHeadLimit bounds the start of the server's stderr kept
// (server.stderrHead).
const stderrHeadLimit = 8 << 10

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := stderrHeadLimit - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

func (t *tailBuffer) snapshot() (string, int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf), t.total, t.total > int64(len(t.buf))
}

// start is the first stderrHeadLimit bytes written.
func (t *tailBuffer) start() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}
