package overlay

import (
	"hash/maphash"
	"strings"
	"testing"

	"github.com/containerd/continuity/fs/fstest"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestKeepsContent(t *testing.T) {
	seed := maphash.MakeSeed()
	l := func(s string) *lineSet { return lineHashes(seed, []byte(s)) }
	memory := `{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes"]}` + "\n" +
		`{"type":"entity","name":"Alan","entityType":"person","observations":[]}` + "\n"
	for _, tc := range []struct {
		name, old, cur string
		want           bool
	}{
		{"an observation added to an entity (JSON lines)", memory,
			`{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes","met Alan"]}` + "\n" +
				`{"type":"entity","name":"Alan","entityType":"person","observations":[]}` + "\n", true},
		{"a record added between", memory,
			`{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes"]}` + "\n" +
				`{"type":"relation","from":"Ada","to":"Alan"}` + "\n" +
				`{"type":"entity","name":"Alan","entityType":"person","observations":[]}` + "\n", true},
		{"an observation removed", memory,
			`{"type":"entity","name":"Ada","entityType":"person","observations":[]}` + "\n" +
				`{"type":"entity","name":"Alan","entityType":"person","observations":[]}` + "\n", false},
		{"a value changed", memory,
			`{"type":"entity","name":"Ada","entityType":"robot","observations":["wrote notes"]}` + "\n" +
				`{"type":"entity","name":"Alan","entityType":"person","observations":[]}` + "\n", false},
		{"a record dropped", memory, `{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes"]}` + "\n", false},
		{"a member added, pretty-printed again", `{"a": 1, "list": [1, 2]}`, "{\n  \"list\": [1, 2, 3],\n  \"a\": 1,\n  \"b\": {\"c\": true}\n}\n", true},
		{"a member removed", `{"a": 1, "b": 2}`, `{"a": 1}`, false},
		{"a type changed", `{"a": [1]}`, `{"a": {"0": 1}}`, false},
		{"a number respelt", `{"a": 1}`, `{"a": 1.0}`, false},
		{"not JSON", "a: 1\n", "a: 1\nb: 2\n", false},
	} {
		if got := keepsContent(l(tc.old), l(tc.cur)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	deep := strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2)
	if ls := l(deep); ls.json != nil {
		t.Error("a document past the depth bound has a tree")
	}
}

// TestRewriteKeepingEveryValueIsToldFromOverwrite: a JSON-lines store
// whose record gains a value, renamed over the old, is ContentKept (not
// LinesKept: a line changed); one that loses a value is neither.
func TestRewriteKeepingEveryValueIsToldFromOverwrite(t *testing.T) {
	step := stepper(t)
	step(fstest.CreateDir("/tmp", 0o1777), fstest.CreateFile("/tmp/memory.jsonl", []byte("{\"name\":\"Ada\",\"observations\":[\"a\"]}\n{\"name\":\"Alan\",\"observations\":[]}\n"), 0o644))
	d := step(renameOver("/tmp/memory.jsonl", "{\"name\":\"Ada\",\"observations\":[\"a\",\"b\"]}\n{\"name\":\"Alan\",\"observations\":[]}\n"))
	if len(d) != 1 || d[0].Change != report.ChangeModified || !d[0].ContentKept || d[0].LinesKept {
		t.Errorf("a value added: %+v", d)
	}
	d = step(renameOver("/tmp/memory.jsonl", "{\"name\":\"Ada\",\"observations\":[\"b\"]}\n{\"name\":\"Alan\",\"observations\":[]}\n"))
	if len(d) != 1 || d[0].ContentKept || d[0].LinesKept {
		t.Errorf("a value removed: %+v", d)
	}
}
