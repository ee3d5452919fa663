package sandbox_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestBoundaryProbes: the unguarded tools of the boundary set (open_note,
// list_folder and save_copy follow "..", fetch_page fetches anything) get
// path-escape and ssrf-followed on each of their boundary calls (the
// marker read, its folder listed, a file written beside it); the guarded ones
// (read_doc, fetch_public) and the honest set (whose read_file has a
// path) get no finding at all; with the sinkhole the fetches are
// answered, and the same tools are found; --no-boundary makes no
// boundary call.
func TestBoundaryProbes(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, net := range []sandbox.NetworkMode{sandbox.NetworkNone, sandbox.NetworkSinkhole} {
		t.Run(net.String(), func(t *testing.T) {
			opts := fixtureOpts(t, "boundary", "honest")
			opts.Network = net
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			verdict.Finish(r, verdict.Config{})
			boundary := map[string][]string{}
			for _, c := range r.Calls {
				if c.Source != "boundary" {
					continue
				}
				if c.Boundary == nil {
					t.Fatalf("call %d: source boundary with no boundary field", c.Seq)
				}
				boundary[c.Tool] = append(boundary[c.Tool], c.Boundary.Kind)
				if want := c.Tool == "open_note" || c.Tool == "list_folder"; c.Boundary.Returned != want {
					t.Errorf("call %d %s %s: returned %v, result %q", c.Seq, c.Tool, c.Arguments, c.Boundary.Returned, c.Result)
				}
				if strings.Contains(c.Result, "last-session: ") && !strings.Contains(c.Result, "<boundary-marker>") {
					t.Errorf("call %d: the marker's secret is not redacted: %q", c.Seq, c.Result)
				}
			}
			want := map[string][]string{
				"open_note": {"path-file", "path-file"}, "read_doc": {"path-file", "path-file"}, "read_file": {"path-file", "path-file"},
				"fetch_page": {"url", "url"}, "fetch_public": {"url", "url"},
				"list_folder": {"path-dir", "path-dir"}, "save_copy": {"path-dest", "path-dest"},
			}
			if !reflect.DeepEqual(boundary, want) {
				t.Errorf("boundary calls %v, want %v", boundary, want)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, fmt.Sprintf("%s %s", f.Tool, f.Rule))
			}
			sort.Strings(got)
			wantF := []string{"fetch_page ssrf-followed", "fetch_page ssrf-followed", "list_folder path-escape", "list_folder path-escape",
				"open_note path-escape", "open_note path-escape", "save_copy path-escape", "save_copy path-escape"}
			if !reflect.DeepEqual(got, wantF) {
				t.Errorf("findings %q, want %q", got, wantF)
			}
			// The boundary calls count toward no tool's coverage: each tool
			// is covered by its one ordinary call.
			for _, tc := range r.Coverage {
				if _, ok := want[tc.Tool]; ok && tc.Tool != "read_file" && (tc.Status != report.CoverageExercised || tc.Calls != 1) {
					t.Errorf("coverage of %s: %+v", tc.Tool, tc)
				}
			}
		})
	}
	t.Run("no-boundary", func(t *testing.T) {
		opts := fixtureOpts(t, "boundary")
		opts.NoBoundary = true
		res, err := runScan(t, cli, opts)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		r := res.Report
		verdict.Finish(r, verdict.Config{})
		for _, c := range r.Calls {
			if c.Source == "boundary" || c.Boundary != nil {
				t.Errorf("call %d: a boundary call with --no-boundary", c.Seq)
			}
		}
		if len(r.Findings) != 0 {
			t.Errorf("findings %+v", r.Findings)
		}
	})
}
