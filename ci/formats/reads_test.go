package formats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestTextListsReads: the text format lists the reads, each with its
// method, target and effect counts; a report without reads shows no
// section.
func TestTextListsReads(t *testing.T) {
	r := report.New()
	var plain bytes.Buffer
	if err := WriteText(&plain, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "reads (") {
		t.Errorf("no reads, a section:\n%s", plain.String())
	}
	eff := report.NewEffects()
	eff.Files = []report.FileChange{{Path: "/workspace/reads.log", Change: report.ChangeCreated}}
	r.Reads = []report.Read{{Seq: 1, Method: "resources/read", Target: "note://counted", Effects: eff}}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "reads (resources, prompts, completions):\n  1  resources/read  note://counted  ok  files 1  procs 0  net 0\n") {
		t.Errorf("text:\n%s", b.String())
	}
}
