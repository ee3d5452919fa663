package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire/readers"
)

var updateJudged = flag.Bool("update-judged", false, "rewrite sandbox/wire/readers/testdata/judged.json from the transports")

// judgedPath holds what the transports make of each case of the readers'
// table; the readers' test (sandbox/wire/readers) feeds these bytes to
// every reader, so the bytes it checks are the ones the code forwards.
const judgedPath = "wire/readers/testdata/judged.json"

// TestReaderCasesThroughTheScan passes each line of the readers' table
// through the scan's stdout filter, the answer to a tools/list of id 1:
// the kinds of what it records and the line it gives the SDK (nil: none)
// must be judged.json's.
func TestReaderCasesThroughTheScan(t *testing.T) {
	got := map[string]readers.Judged{}
	for _, c := range readers.Cases {
		gate := newFrameGate(DefaultBounds())
		gate.sent("tools/list", int64(readers.RequestID))
		pr, pw := io.Pipe()
		n := &noiseFilter{maxKeep: 2}
		go n.filter(strings.NewReader(c.Line+"\n"), pw, gate)
		var j readers.Judged
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			j.Scan = append(j.Scan, sc.Text())
		}
		amb, _ := gate.ambiguities()
		for _, a := range amb {
			j.ScanFound = append(j.ScanFound, a.Kind)
		}
		got[c.Name] = j
	}
	compareJudged(t, got, func(j *readers.Judged, g readers.Judged) { j.Scan, j.ScanFound = g.Scan, g.ScanFound })
}

// compareJudged holds got's part (set copies it) to judged.json, or
// writes it there with -update-judged.
func compareJudged(t *testing.T, got map[string]readers.Judged, set func(j *readers.Judged, g readers.Judged)) {
	t.Helper()
	file := map[string]readers.Judged{}
	if b, err := os.ReadFile(judgedPath); err == nil {
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatal(err)
		}
	} else if !*updateJudged {
		t.Fatal(err)
	}
	want := map[string]readers.Judged{}
	for name, j := range file {
		want[name] = j
	}
	for name, g := range got {
		j := file[name]
		set(&j, g)
		file[name] = j
	}
	if *updateJudged {
		b, err := json.MarshalIndent(file, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(judgedPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(judgedPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for name := range got {
		a, _ := json.Marshal(want[name])
		b, _ := json.Marshal(file[name])
		if string(a) != string(b) {
			t.Errorf("%s: the transports now give\n%s\n%s has\n%s\n(go test ./sandbox/ -run ReaderCases -update-judged rewrites it; then run the readers' test)", name, b, judgedPath, a)
		}
	}
}

// TestReaderCasesThroughRun passes each line of the readers' table
// through run's path, the session's stdout filter (passAsRead) and the
// relay, as the answer to the client's tools/list of id 1: the lines the
// client is given must be judged.json's.
func TestReaderCasesThroughRun(t *testing.T) {
	got := map[string]readers.Judged{}
	for _, c := range readers.Cases {
		got[c.Name] = throughRun(t, c.Line)
	}
	compareJudged(t, got, func(j *readers.Judged, g readers.Judged) { j.Run, j.RunFound = g.Run, g.RunFound })
}

// throughRun is what run gives its client of line, the answer to the
// client's tools/list 1.
func throughRun(t *testing.T, line string) readers.Judged {
	t.Helper()
	gate := newFrameGate(DefaultBounds())
	gate.passAsRead = true
	notes := newAmbNotes()
	var mu sync.Mutex
	var found []string
	gate.onAmbiguity = func(a report.Ambiguity) {
		mu.Lock()
		found = append(found, a.Kind)
		mu.Unlock()
		notes.note(a)
	}
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	r2sR, r2sW := io.Pipe()
	srvR, srvW := io.Pipe()
	s2rR, s2rW := io.Pipe()
	rl := newRelay(&fakeMarker{}, relayOptions{Notes: notes,
		Expect: func(id json.RawMessage, method string) {
			if v, ok := idValue(id); ok {
				gate.sent(runKey(id, method), v)
			}
		},
		Answered: func(id json.RawMessage, method string) { gate.take(runKey(id, method)) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rl.run(ctx, c2rR, r2cW, s2rR, r2sW); r2cW.Close(); r2sW.Close(); close(done) }()
	go (&noiseFilter{maxKeep: 2}).filter(srvR, s2rW, gate)
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
