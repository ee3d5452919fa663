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
// r's error. Lines longer than maxLine are dropped as noise.
func (n *noiseFilter) filter(r io.Reader, w *io.PipeWriter, maxLine int) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, maxLine)
		if len(line) > 0 {
			trimmed := bytes.TrimSpace(line)
			switch {
			case len(trimmed) == 0:
			case (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed):
				if clean := report.CleanJSON(trimmed); !bytes.Equal(clean, trimmed) {
					// What the client reads is clean (every string it takes
					// is valid UTF-8, \xNN for other bytes); the transcript
					// keeps the line as it was.
					if n.raw != nil {
						n.raw(trimmed)
					}
					trimmed = clean
				}
				if _, werr := w.Write(append(trimmed, '\n')); werr != nil {
					// The session is gone; keep reading, so that the stream
					// behind (stderr, the agent's events) does not stall.
					w.CloseWithError(werr)
					io.Copy(io.Discard, br)
					return
				}
			default:
				n.note(trimmed)
			}
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

// readLine reads one line, keeping at most max bytes of it (the rest of an
// over-long line is discarded, and the kept part is not valid JSON).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line) < max {
			line = append(line, chunk[:min(len(chunk), max-len(line))]...)
		} else if len(line) == max {
			line = append(line, "…"...) // marks truncation; makes it invalid JSON
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}

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
