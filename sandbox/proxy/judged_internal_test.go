package proxy

import (
	"bufio"
	"context"
	"flag"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire/readers"
)

var updateJudged = flag.Bool("update-judged", false, "rewrite sandbox/wire/readers/testdata/judged.json (run's part) from the relay")

// judgedPath is the readers' table of what the transports make of each
// case (see sandbox's TestReaderCasesThroughTheScan).
const judgedPath = "../wire/readers/testdata/judged.json"

// TestReaderCasesThroughRun passes each line of the readers' table
// through run's path, the session's stdout filter (sandbox.StdoutFilter) and the
// relay, as the answer to the client's tools/list of id 1: the lines the
// client is given must be judged.json's.
func TestReaderCasesThroughRun(t *testing.T) {
	got := map[string]readers.Judged{}
	for _, c := range readers.Cases {
		got[c.Name] = throughRun(t, c.Line)
	}
	readers.CompareJudged(t, judgedPath, *updateJudged, got, func(j *readers.Judged, g readers.Judged) { j.Run, j.RunFound = g.Run, g.RunFound })
}

// throughRun is what run gives its client of line, the answer to the
// client's tools/list 1.
func throughRun(t *testing.T, line string) readers.Judged {
	t.Helper()
	notes := newAmbNotes()
	var mu sync.Mutex
	var found []string
	filter := sandbox.NewStdoutFilter(sandbox.DefaultBounds(), func(a report.Ambiguity) {
		mu.Lock()
		found = append(found, a.Kind)
		mu.Unlock()
		notes.note(a)
	})
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	r2sR, r2sW := io.Pipe()
	srvR, srvW := io.Pipe()
	s2rR, s2rW := io.Pipe()
	rl := newRelay(&fakeMarker{}, relayOptions{Notes: notes,
		Expect: filter.ExpectAnswer, Answered: filter.Answered})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rl.run(ctx, c2rR, r2cW, s2rR, r2sW); r2cW.Close(); r2sW.Close(); close(done) }()
	go filter.Run(srvR, s2rW)
	lines := func(r io.Reader) chan string {
		ch := make(chan string, 64)
		go func() {
			defer close(ch)
			br := bufio.NewReaderSize(r, 1<<20)
			for {
				l, err := br.ReadString('\n')
				if err != nil {
					return
				}
				ch <- strings.TrimSuffix(l, "\n")
			}
		}()
		return ch
	}
	toServer, toClient := lines(r2sR), lines(r2cR)
	defer func() {
		cancel()
		c2rW.Close()
		srvW.Close()
		<-done
	}()
	wait := func(ch chan string) string {
		select {
		case l := <-ch:
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing came (line %.60s)", line)
			return ""
		}
	}
	go io.WriteString(c2rW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	wait(toServer)
	// A ping answered after the line: the client has every line forwarded
	// of it once it has the ping's answer (the filter and the relay keep
	// order).
	go io.WriteString(c2rW, `{"jsonrpc":"2.0","id":424242,"method":"ping"}`+"\n")
	wait(toServer)
	const pong = `{"jsonrpc":"2.0","id":424242,"result":{}}`
	go io.WriteString(srvW, line+"\n"+pong+"\n")
	j := readers.Judged{Run: []string{}}
	for l := wait(toClient); l != pong; l = wait(toClient) {
		j.Run = append(j.Run, l)
	}
	mu.Lock()
	j.RunFound = found
	mu.Unlock()
	return j
}
