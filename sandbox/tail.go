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
	// every secretChunk bytes written (pending), with the last secretCarry
	// bytes before them (carry), so that a secret anywhere in the stream
	// is found however it is split, at a cost per byte that does not
	// depend on how the server cuts its writes; found holds their names.
	find    func(data string) []string
	pending []byte
	carry   []byte
	found   map[string]bool
}

// secretChunk is how much stderr is gathered before it is looked
// through for secrets.
const secretChunk = 16 << 10

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
		t.pending = append(t.pending, p...)
		if len(t.pending) >= secretChunk {
			t.scan()
		}
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

// scan looks for the planted secrets in what is pending and the carry
// before it.
func (t *tailBuffer) scan() {
	if len(t.pending) == 0 {
		return
	}
	data := append(t.carry, t.pending...)
	t.pending = t.pending[:0]
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
	if t.find != nil {
		t.scan()
	}
	var out []string
	for name := range t.found {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
