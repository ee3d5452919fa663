package sandbox

import (
	"io"
	"sync"
)

// elasticPipe is an in-memory pipe whose writer does not wait for the
// reader until max bytes are buffered. The attach stream carries stdout
// and stderr (the agent's events) interleaved in one connection: with a
// synchronous pipe, stdout that nobody reads yet (a banner, an early
// notification) would hold back every event behind it, and the engine
// does not keep the two streams in order. Past max the writer waits, so
// a server that floods stdout unread costs bounded memory.
type elasticPipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	max    int
	err    error // set by CloseWithError: returned once buf is drained
	closed bool  // the reader is gone
}

func newElasticPipe(max int) *elasticPipe {
	p := &elasticPipe{max: max}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *elasticPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for len(b) > 0 {
		for len(p.buf) >= p.max && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			return n, io.ErrClosedPipe
		}
		k := min(len(b), p.max-len(p.buf))
		p.buf = append(p.buf, b[:k]...)
		b, n = b[k:], n+k
		p.cond.Broadcast()
	}
	return n, nil
}

// CloseWithError ends the stream: the reader gets err (io.EOF when nil)
// once it has read what is buffered.
func (p *elasticPipe) CloseWithError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		err = io.EOF
	}
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}

func (p *elasticPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && p.err == nil && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	if len(p.buf) == 0 {
		return 0, p.err
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	if len(p.buf) == 0 {
		p.buf = nil // let a flood's buffer go
	}
	p.cond.Broadcast()
	return n, nil
}

// Close is the reader giving up: writers stop waiting.
func (p *elasticPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.cond.Broadcast()
	return nil
}
