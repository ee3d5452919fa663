package sandbox

import "sync"

// tailBuffer keeps the last max bytes written to it and counts them all, so
// that a server flooding stderr costs bounded memory.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
