package sandbox

import (
	"errors"
	"io"
	"testing"
	"time"
)

// TestElasticPipeDoesNotHoldBackTheWriter: stdout nobody reads yet must not
// stall the stream behind it (the agent's events), up to the bound.
func TestElasticPipeDoesNotHoldBackTheWriter(t *testing.T) {
	p := newElasticPipe(8)
	if n, err := p.Write([]byte("banner\n")); n != 7 || err != nil {
		t.Fatalf("write below the bound: %d, %v", n, err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("more than fits"))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write past the bound returned before anything was read: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	go func() {
		// The writer ends the stream once its last write is in.
		if err := <-wrote; err != nil {
			t.Errorf("blocked write: %v", err)
		}
		p.CloseWithError(nil)
	}()
	got, err := io.ReadAll(p)
	if err != nil || string(got) != "banner\nmore than fits" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestElasticPipeEnds(t *testing.T) {
	p := newElasticPipe(4)
	boom := errors.New("boom")
	p.Write([]byte("ab"))
	p.CloseWithError(boom)
	b := make([]byte, 10)
	if n, err := p.Read(b); n != 2 || err != nil {
		t.Fatalf("buffered bytes first: %d, %v", n, err)
	}
	if _, err := p.Read(b); !errors.Is(err, boom) {
		t.Fatalf("then the error: %v", err)
	}
	// A reader that gives up releases a waiting writer.
	q := newElasticPipe(1)
	done := make(chan error, 1)
	go func() { _, err := q.Write([]byte("xyz")); done <- err }()
	time.Sleep(10 * time.Millisecond)
	q.Close()
	if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("writer after Close: %v", err)
	}
}
