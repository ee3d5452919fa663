package rules

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestNoHintFindingsWithoutAnnotations: a server that speaks 2024-11-05,
// which has no tool annotations, makes no hint claim: the scenario that
// fires every hint rule at 2025-03-26 fires only the hint-free rule there,
// hints sent or not, a safety hint given up during the session included
// (a definition change, not tool-hints-changed); no call is a suspect for
// its hints either.
func TestNoHintFindingsWithoutAnnotations(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	nd := report.Tool{Name: "nd", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	idem := report.Tool{Name: "idem", Hints: report.Hints{Idempotent: b(true)}}
	closed := report.Tool{Name: "closed", Hints: report.Hints{OpenWorld: b(false)}}
	mk := func(version string) *report.Report {
		r := scenario(
			call{tool: ro, files: []report.FileChange{wsWrite}},
			call{tool: nd, files: []report.FileChange{del}},
			call{tool: idem, args: `{"a":1}`, files: []report.FileChange{{Path: "/workspace/log", Change: report.ChangeModified, Type: "file", SHA256: "1"}}},
			call{tool: idem, args: `{"a":1}`, files: []report.FileChange{rewrote}},
			call{tool: closed, net: []report.NetEvent{outward}},
			call{tool: ro, files: []report.FileChange{tmpWrite}},
		)
		r.ToolChanges = []report.ToolChange{changed(1, "ro", "annotations.readOnlyHint", "true", "false")}
		r.Server.ProtocolVersion = version
		return r
	}
	for version, want := range map[string][]string{
		"2025-03-26": {"closed-world-network closed", "idempotent-repeats idem", "nondestructive-deletes nd", "readonly-writes ro", "readonly-writes ro",
			"tool-hints-changed ro", "writes-outside-workspace ro"},
		"2024-11-05": {"tool-definition-changed ro", "writes-outside-workspace ro"},
	} {
		r := mk(version)
		evaluate(r, Policy{})
		if got := fired(r); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fired %q\nwant %q", version, got, want)
		}
		if version == "2024-11-05" {
			if s := Suspects(r, Options{}); !reflect.DeepEqual(s, []int{6}) {
				t.Errorf("%s: suspects %v, want only the call that wrote outside the workspace", version, s)
			}
			if r.Tools[0].Hints.ReadOnly == nil {
				t.Errorf("the report's hints were changed")
			}
		}
	}
}
