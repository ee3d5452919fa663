package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// httpGate holds the messages in the server's HTTP responses to the
// bounds and the cleaning the lines of a stdio server's stdout get (see
// noiseFilter.filter): each message is read through a frameScan, one over
// --max-message or --max-depth is refused (an error answers the request
// in its place, the gate records it), the rest are cleaned
// (report.CleanJSON; the transcript keeps the bytes as received) and
// their result's digest noted. So the SDK never reads more than the
// bounds let through, over either transport.
type httpGate struct {
	gate *frameGate
	raw  func(line []byte) // receives a message cleaning changed, as it was
	// failed, if set, is told of a body that broke off (not at its end).
	failed func(error)
}

// broke tells failed of a body's read error that is no end.
func (h *httpGate) broke(err error) {
	if h.failed != nil && err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		h.failed(err)
	}
}

// admit decides what the client reads of one message: msg is what was
// kept of it (at most the message bound), scan has seen all of it, over
// says it was longer than msg. nil: nothing (a refused message that
// answers no request of ours).
func (h *httpGate) admit(scan *frameScan, msg []byte, over bool) []byte {
	b := h.gate.bounds
	trimmed := bytes.TrimSpace(msg)
	framed := scan.top == '{' || scan.top == '['
	switch {
	case framed && !over && scan.maxDepth > b.MaxDepth:
		return h.gate.refuse(scan, BoundDepth)
	case framed && over:
		return h.gate.refuse(scan, BoundMessageSize)
	case framed && json.Valid(trimmed):
		clean := report.CleanJSON(trimmed)
		if len(clean) > b.MaxMessage {
			scan.n = int64(len(clean))
			return h.gate.refuse(scan, BoundMessageSize)
		}
		out := h.gate.judge(scan, trimmed, clean)
		if out == nil {
			return nil
		}
		h.gate.passed(scan)
		if !bytes.Equal(out, trimmed) && h.raw != nil {
			h.raw(trimmed)
		}
		return out
	case framed:
		// A message only some readers take whole is not given to the
		// SDK, which might take it.
		if out, ambiguous := h.gate.judgeRefused(scan, trimmed); ambiguous {
			return out
		}
	}
	// Not JSON: passed on (cut at the bound) for the SDK to refuse, which
	// ends the session with an error that says so.
	return trimmed
}

// body wraps a response's body by its media type: a JSON message, an
// event stream of messages, or anything else (an error page), cut at the
// message bound.
func (h *httpGate) body(resp *http.Response) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch strings.ToLower(mt) {
	case "application/json":
		resp.Body = &jsonBody{h: h, in: resp.Body}
	case "text/event-stream":
		resp.Body = &sseBody{h: h, in: resp.Body, br: bufio.NewReaderSize(resp.Body, 64<<10)}
	default:
		resp.Body = limitedBody{Reader: io.LimitReader(resp.Body, int64(h.gate.bounds.MaxMessage)), Closer: resp.Body}
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// jsonBody is a response whose body is one message: read through the
// gate whole at the first Read.
type jsonBody struct {
	h    *httpGate
	in   io.ReadCloser
	out  *bytes.Reader
	rerr error
}

func (j *jsonBody) Read(p []byte) (int, error) {
	if j.out == nil {
		j.fill()
	}
	n, err := j.out.Read(p)
	if err == io.EOF && j.rerr != nil {
		err = j.rerr
	}
	return n, err
}

func (j *jsonBody) fill() {
	var scan frameScan
	max := j.h.gate.bounds.MaxMessage
	var msg []byte
	over := false
	buf := make([]byte, 32<<10)
	for {
		n, err := j.in.Read(buf)
		scan.write(buf[:n])
		if len(msg)+n > max {
			over = true
		} else {
			msg = append(msg, buf[:n]...)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				j.rerr = err
				j.h.broke(err)
			}
			break
		}
	}
	if scan.n == 0 {
		j.out = bytes.NewReader(nil)
		return
	}
	j.out = bytes.NewReader(j.h.admit(&scan, msg, over))
}

func (j *jsonBody) Close() error { return j.in.Close() }

// sseBody is a response whose body is an event stream: each event's data
// (a message, for events named "message" or not named) goes through the
// gate, and the event is written again with what the client may read.
// Fields other than data, event, id and retry (comments among them) are
// dropped; a field's value is kept to the message bound (the others to
// maxSSEField), the rest read through.
type sseBody struct {
	h    *httpGate
	in   io.ReadCloser
	br   *bufio.Reader
	out  []byte
	rerr error
}

// maxSSEField bounds the value of an event's name, id or retry field.
const maxSSEField = 1 << 10

func (s *sseBody) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.rerr != nil {
			return 0, s.rerr
		}
		s.next()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// next reads one event and queues what the client reads of it.
func (s *sseBody) next() {
	bound := s.h.gate.bounds.MaxMessage
	var scan frameScan
	var data, name, id, retry []byte
	hasData, over, hasID := false, false, false
	for {
		// One line, a chunk at a time: its field name is in the first.
		var field string
		var value *[]byte
		limit := maxSSEField
		first := true
		for {
			chunk, isPrefix, err := s.br.ReadLine()
			if first {
				first = false
				if len(chunk) == 0 && !isPrefix && err == nil {
					// A blank line ends the event.
					s.emit(&scan, data, hasData, over, name, id, hasID, retry)
					return
				}
				f, v, _ := bytes.Cut(chunk, []byte(":"))
				v = bytes.TrimPrefix(v, []byte(" "))
				field = string(f)
				switch field {
				case "data":
					if hasData {
						scan.write([]byte("\n"))
						if len(data)+1 > bound {
							over = true
						} else {
							data = append(data, '\n')
						}
					}
					hasData, value, limit = true, &data, bound
				case "event":
					name, value = name[:0], &name
				case "id":
					id, value, hasID = id[:0], &id, true
				case "retry":
					retry, value = retry[:0], &retry
				}
				chunk = v
			}
			if value != nil {
				if field == "data" {
					scan.write(chunk)
				}
				if len(*value)+len(chunk) > limit {
					if field == "data" {
						over = true
					}
					*value = append(*value, chunk[:max(0, limit-len(*value))]...)
				} else {
					*value = append(*value, chunk...)
				}
			}
			if err != nil {
				// An event the stream ends in the middle of is not
				// dispatched (the specification's rule).
				s.rerr = err
				s.h.broke(err)
				return
			}
			if !isPrefix {
				break
			}
		}
	}
}

// emit queues the event again, its data through the gate.
func (s *sseBody) emit(scan *frameScan, data []byte, hasData, over bool, name, id []byte, hasID bool, retry []byte) {
	var b bytes.Buffer
	if len(name) > 0 {
		b.WriteString("event: ")
		b.Write(oneLine(name))
		b.WriteByte('\n')
	}
	if hasID {
		b.WriteString("id: ")
		b.Write(oneLine(id))
		b.WriteByte('\n')
	}
	if len(retry) > 0 {
		b.WriteString("retry: ")
		b.Write(oneLine(retry))
		b.WriteByte('\n')
	}
	if hasData {
		if len(name) == 0 || string(name) == "message" {
			if scan.n == 0 {
				data = nil
			} else {
				data = s.h.admit(scan, data, over)
			}
		}
		if data != nil || scan.n == 0 {
			for _, l := range bytes.Split(data, []byte("\n")) {
				b.WriteString("data: ")
				b.Write(bytes.TrimSuffix(l, []byte("\r")))
				b.WriteByte('\n')
			}
		}
	}
	if b.Len() == 0 {
		return // nothing the client would act on: a comment, a blank line
	}
	b.WriteByte('\n')
	s.out = b.Bytes()
}

func oneLine(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r"), nil) }

func (s *sseBody) Close() error { return s.in.Close() }
