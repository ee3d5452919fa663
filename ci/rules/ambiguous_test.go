package rules

import (
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestAmbiguousMessage: one finding per tool whose definition was
// ambiguous, one for the server's other messages, each an error naming
// the fields.
func TestAmbiguousMessage(t *testing.T) {
	r := &report.Report{}
	r.Server.Ambiguities = []report.Ambiguity{
		{Kind: "case-variant-key", Method: "tools/list", Tool: "peek", Path: "result.tools[0]", Key: "ANNOTATIONS", Detail: "d"},
		{Kind: "id-form", Method: "tools/list", Path: "id", Detail: "d"},
		{Kind: "duplicate-key", Method: "tools/list", Tool: "peek", Path: "result.tools[0].annotations", Key: "readOnlyHint", Detail: "d"},
		{Kind: "non-finite-number", Path: "result.x", Detail: "d", Refused: true},
	}
	r.Server.AmbiguitiesOmitted = 3
	got := Evaluate(r, Options{})
	var mine []report.Finding
	for _, f := range got {
		if f.Rule == AmbiguousMessage {
			mine = append(mine, f)
		}
	}
	if len(mine) != 2 || mine[0].Tool != "peek" || mine[1].Tool != "" || mine[0].Severity != report.SeverityError {
		t.Fatalf("findings: %+v", mine)
	}
	if ev := mine[0].Evidence; len(ev) != 2 || ev[0] != `case-variant-key at tools/list: result.tools[0]."ANNOTATIONS": d` {
		t.Errorf("peek's evidence: %q", ev)
	}
	if ev := mine[1].Evidence; len(ev) != 3 || !strings.HasSuffix(ev[1], "(not given to the client)") || !strings.HasPrefix(ev[2], "3 more") {
		t.Errorf("the server's evidence: %q", ev)
	}
	if _, ok := ByID(AmbiguousMessage); !ok {
		t.Error("not among the rules")
	}
}
