package sandbox

import (
	"slices"
	"sync"
)

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
	// find, when set, names the planted secrets in data; it is run on
	// every write, with the last secretCarry bytes before it, so that a
	// secret anywhere in the stream is found however much is written and
	// however it is split; found holds their names.
	find  func(data string) []string
	carry []byte
	found map[string]bool
}

// secretCarry is what of the stream before a write is looked at again
// with it: more than the longest form of a planted secret (the hex of the
// 64-character SSH key, 128 bytes).
const secretCarry = 512

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
	if t.find != nil {
		t.scan(p)
	}
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

// scan looks for the planted secrets in p and the carry before it.
func (t *tailBuffer) scan(p []byte) {
	data := append(t.carry, p...)
	for _, name := range t.find(string(data)) {
		if t.found == nil {
			t.found = map[string]bool{}
		}
		t.found[name] = true
	}
	t.carry = append(t.carry[:0], data[max(len(data)-secretCarry, 0):]...)
}

// secrets are the names of the planted secrets found in the stream,
// sorted.
func (t *tailBuffer) secrets() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name := range t.found {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
