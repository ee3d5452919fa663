package sandbox_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// statefulTools are the fixture's "stateful" set: each needs an argument
// that means something, a call before it, or a retry.
var statefulTools = []string{"set_working_dir", "list_here", "create_session", "use_session", "convert_time", "toggle", "picky"}

// TestStatefulToolsAllExercised: with no probe file, every tool of the
// stateful set ends with a non-error result, in one session and with a
// container per call: setup tools first, the id create_session returned
// given to use_session, a real time zone, the boolean of a union, and a
// retry after a -32602 refusal, each attempt in the report.
func TestStatefulToolsAllExercised(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, iso := range []sandbox.Isolation{sandbox.IsolationSession, sandbox.IsolationCall} {
		t.Run(iso.String(), func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "stateful")
			opts.Isolation = iso
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			if !r.Complete || len(r.NotCalled) > 0 {
				t.Fatalf("complete %v, not called %+v, problems %+v", r.Complete, r.NotCalled, r.Problems)
			}
			last := map[string]report.Call{}
			var order []string
			for _, c := range r.Calls {
				if c.Source != "repeat" && c.Source != "boundary" {
					last[c.Tool] = c
				}
				if !slices.Contains(order, c.Tool) {
					order = append(order, c.Tool)
				}
			}
			for _, tool := range statefulTools {
				c, ok := last[tool]
				if !ok {
					t.Errorf("%s: not called", tool)
					continue
				}
				if c.IsError || c.ErrorKind != "" {
					t.Errorf("%s: last call %d %s failed: %q %q", tool, c.Seq, c.Arguments, c.Result, c.Error)
				}
			}
			// Setup tools first.
			if len(order) < 2 || !slices.Contains(order[:2], "set_working_dir") || !slices.Contains(order[:2], "create_session") {
				t.Errorf("order %q: setup tools should come first", order)
			}
			if !last["create_session"].Setup || last["list_here"].Setup {
				t.Errorf("setup marks: create_session %v, list_here %v", last["create_session"].Setup, last["list_here"].Setup)
			}
			// use_session took the id create_session returned.
			if us := last["use_session"]; len(us.ValuesFrom) != 1 || us.ValuesFrom[0] != last["create_session"].Seq {
				t.Errorf("use_session valuesFrom %v, create_session is call %d", us.ValuesFrom, last["create_session"].Seq)
			}
			// picky: refused with -32602, retried, and its repeat follows the retry.
			var picky []report.Call
			for _, c := range r.Calls {
				if c.Tool == "picky" {
					picky = append(picky, c)
				}
			}
			if len(picky) != 3 || picky[0].ErrorKind != "rpc" || picky[1].Source != "retry" || picky[1].Retries != picky[0].Seq ||
				picky[2].Source != "repeat" || string(picky[2].Arguments) != string(picky[1].Arguments) {
				b, _ := json.Marshal(picky)
				t.Errorf("picky calls: %s", b)
			}
		})
	}
}
