package sandbox

import (
	"bufio"
	"flag"
	"io"
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
	readers.CompareJudged(t, judgedPath, *updateJudged, got, func(j *readers.Judged, g readers.Judged) { j.Scan, j.ScanFound = g.Scan, g.ScanFound })
}
