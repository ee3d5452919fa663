package proxy

import (
	"errors"
	"io"
	"sync"
	"time"
)

// clientQueue is the relay's way to the client: writes are queued, at
// most a number of messages and of bytes, and one goroutine writes them
// in order, so that the relay never blocks on a client that is slow to
// read (or has stopped reading while it writes to us: a server's ping
// flood then deadlocked both). Past either bound the queue refuses
// (errFlood), and the relay ends the session.
type clientQueue struct {
	w        io.Writer
	maxBytes int64

	mu     sync.Mutex
	ch     chan []byte
	bytes  int64
	closed bool
	done   chan struct{}
}

// errFlood is why a session ends when the server sends the client more
// than the queue holds.
var errFlood = errors.New("the server sent the client more than the client queue holds (--client-queue)")

// DefaultClientQueue and DefaultClientQueueBytes bound what waits for a
// client to read it.
const (
	DefaultClientQueue      = 1000
	DefaultClientQueueBytes = 16 << 20
)

func newClientQueue(w io.Writer, msgs int, maxBytes int64) *clientQueue {
	if msgs <= 0 {
		msgs = DefaultClientQueue
	}
	if maxBytes <= 0 {
		maxBytes = DefaultClientQueueBytes
	}
	q := &clientQueue{w: w, maxBytes: maxBytes, ch: make(chan []byte, msgs), done: make(chan struct{})}
	go q.write()
	return q
}

func (q *clientQueue) write() {
	defer close(q.done)
	for line := range q.ch {
		q.w.Write(line)
		q.mu.Lock()
		q.bytes -= int64(len(line))
		q.mu.Unlock()
	}
}

// put queues line; errFlood past a bound (nil, dropped, once closed).
func (q *clientQueue) put(line []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	if q.bytes+int64(len(line)) > q.maxBytes {
		return errFlood
	}
	select {
	case q.ch <- line:
		q.bytes += int64(len(line))
		return nil
	default:
		return errFlood
	}
}

// finish lets what is queued be written, for at most d (a client that
// does not read is not waited for); it says whether all was.
func (q *clientQueue) finish(d time.Duration) bool {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-q.done:
		return true
	case <-t.C:
		return false
	}
}
