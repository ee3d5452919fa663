package sandbox

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
