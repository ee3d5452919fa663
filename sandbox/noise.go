package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// noiseFilter passes on the lines of a server's stdout that are JSON and
// counts, and samples, the rest. Many servers print a banner or log lines
// to stdout; dropping them keeps the MCP stream alive and the report says
// what was dropped.
type noiseFilter struct {
	mu      sync.Mutex
	count   int
	sample  []string
	maxKeep int
	// raw, if set, receives each JSON line that report.CleanJSON changed,
	// as it was.
	raw func(line []byte)
}

// filter copies the JSON lines of r to w until r ends, then closes w with
// r's error. A line that starts as JSON and breaks a bound of gate's (its
// size, its nesting) is read through without being kept and refused: an
// error answers the request in its place, and gate records it. Other
// lines that are not JSON are noise: counted and sampled.
func (n *noiseFilter) filter(r io.Reader, w *io.PipeWriter, gate *frameGate) {
	br := bufio.NewReaderSize(r, 64<<10)
	maxLine := gate.bounds.MaxMessage
	var scan frameScan
	var line []byte
	send := func(b []byte) bool {
		if _, werr := w.Write(b); werr != nil {
			// The session is gone; keep reading, so that the stream
			// behind (stderr, the agent's events) does not stall.
			w.CloseWithError(werr)
			io.Copy(io.Discard, br)
			return false
		}
		return true
	}
	for {
		scan.reset()
		line = line[:0]
		over := false
		var err error
		for {
			var chunk []byte
			var isPrefix bool
			chunk, isPrefix, err = br.ReadLine()
			scan.write(chunk)
			switch {
			case over:
			case len(line)+len(chunk) > maxLine:
				// Kept: only what a noise sample shows.
				over, line = true, append(line[:min(len(line), maxNoiseSample)], chunk[:min(len(chunk), max(maxNoiseSample-len(line), 0))]...)
			default:
				line = append(line, chunk...)
			}
			if err != nil || !isPrefix {
				break
			}
		}
		trimmed := bytes.TrimSpace(line)
		framed := scan.top == '{' || scan.top == '['
		switch {
		case scan.n == 0 || (len(trimmed) == 0 && !over):
		case framed && !over && scan.maxDepth > gate.bounds.MaxDepth:
			if out := gate.refuse(&scan, BoundDepth); out != nil && !send(append(out, '\n')) {
				return
			}
		case framed && over:
			if out := gate.refuse(&scan, BoundMessageSize); out != nil && !send(append(out, '\n')) {
				return
			}
		case framed && json.Valid(trimmed):
			clean := report.CleanJSON(trimmed)
			if len(clean) > maxLine {
				// Escaping grows a line (\xNN for one byte): the bound holds
				// for what the client would read.
				scan.n = int64(len(clean))
				if out := gate.refuse(&scan, BoundMessageSize); out != nil && !send(append(out, '\n')) {
					return
				}
				break
			}
			// What the client reads is clean (every string it takes is
			// valid UTF-8, \xNN for other bytes) and read once: the
			// judge's reading where readers part. The transcript keeps the
			// line as it was.
			out := gate.judge(&scan, trimmed, clean)
			if out == nil {
				break
			}
			gate.passed(&scan)
			if !bytes.Equal(out, trimmed) {
				if n.raw != nil {
					n.raw(trimmed)
				}
				trimmed = out
			}
			if !send(append(trimmed, '\n')) {
				return
			}
		case over:
			n.note(append(trimmed, "…"...))
		default:
			if framed || bytes.HasPrefix(trimmed, utf8BOM) {
				if out, _ := gate.judgeRefused(&scan, trimmed); out != nil && !send(append(out, '\n')) {
					return
				}
			}
			n.note(trimmed)
		}
		if cap(line) > 1<<20 {
			line = nil // a large line's buffer is not held on to
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			w.CloseWithError(err)
			return
		}
	}
}

// utf8BOM starts a line some readers take for a message.
var utf8BOM = []byte("\xef\xbb\xbf")

// maxNoiseSample is what is kept of a line too long to pass, for the noise
// sample.
const maxNoiseSample = 256

func (n *noiseFilter) note(line []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.count++
	if len(n.sample) < n.maxKeep {
		s := string(line)
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		n.sample = append(n.sample, strconv.QuoteToGraphic(s))
	}
}

func (n *noiseFilter) snapshot() (int, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.count, append([]string{}, n.sample...)
}
