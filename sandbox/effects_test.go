package sandbox_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// effects renders a call's file effects as "change type scope/area path".
func effects(c report.Call) []string {
	out := []string{}
	for _, f := range c.Effects.Files {
		where := f.Scope
		if f.Area != "" {
			where += "/" + f.Area
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", f.Change, f.Type, where, f.Path))
	}
	return out
}

// TestFileEffectsOnTheLyingFixture checks every write, modification and
// deletion of the lying tools, in and outside the workspace, on the right
// call; that an honest read-only tool called three times shows nothing;
// and that the upper-dir path and the API fallback agree.
func TestFileEffectsOnTheLyingFixture(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	want := map[string][]string{
		"echo":           {},
		"read_file":      {},
		"list_workspace": {},
		"lying_read": {
			"created file outside/home /home/sandbox/.config/fixture.rc",
			"created dir outside/tmp /tmp/cache",
			"created file outside/tmp /tmp/cache/state.json",
			"created dir workspace /workspace/tests",
			"created file workspace /workspace/tests/probe.spec.ts",
		},
		"tidy": {
			"modified file workspace /workspace/data.json",
			"deleted file workspace /workspace/seed.txt",
		},
		"run_tests": {"created file outside/tmp /tmp/ran.txt"},
		"add_note": {
			"created dir workspace /workspace/notes",
			"created file workspace /workspace/notes/note-1.txt",
		},
	}
	got := map[sandbox.ChangesMode][][]string{}
	for _, mode := range []sandbox.ChangesMode{sandbox.ChangesUpperDir, sandbox.ChangesAPI} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := fixtureOpts(t, "honest", "liar")
			opts.Workspace = seedWorkspace(t)
			opts.Changes = mode
			opts.Probes = steps(t, `[{"tool":"echo","arguments":{"text":"1"}},{"tool":"echo","arguments":{"text":"2"}},{"tool":"echo","arguments":{"text":"3"}},
				{"tool":"read_file","arguments":{"path":"seed.txt"}},{"tool":"list_workspace"},
				{"tool":"lying_read"},{"tool":"tidy"},{"tool":"run_tests"},{"tool":"add_note","arguments":{"text":"n"}}]`)
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			if r.Sandbox.Changes != mode.String() {
				t.Fatalf("changes read by %q, want %q", r.Sandbox.Changes, mode)
			}
			var all [][]string
			for _, c := range r.Calls {
				if c.Source == "repeat" {
					continue // idempotent tools called again; the rules' concern
				}
				w, ok := want[c.Tool]
				e := effects(c)
				all = append(all, e)
				if ok && !reflect.DeepEqual(e, w) {
					t.Errorf("call %d %s: effects\n got %q\nwant %q", c.Seq, c.Tool, e, w)
				}
			}
			for _, c := range callsOf(r, "tidy") {
				for _, f := range c.Effects.Files {
					if f.Path == "/workspace/data.json" && (f.SHA256 == "" || f.SHA256Before == "" || f.SHA256 == f.SHA256Before) {
						t.Errorf("data.json hashes after %q before %q", f.SHA256, f.SHA256Before)
					}
				}
			}
			// No noise from the runtime or the mounts in any phase; the only
			// phase with effects is the one after "background", whose child
			// writes a second after the call returned.
			bg := callsOf(r, "background")
			for _, p := range r.Phases {
				var got []string
				for _, f := range p.Effects.Files {
					got = append(got, f.Change.String()+" "+f.Path)
				}
				if p.Name == "between" && len(bg) == 1 && p.After == bg[0].Seq {
					if !reflect.DeepEqual(got, []string{"created /tmp/late.txt"}) {
						t.Errorf("after background: %q, want the late write", got)
					}
					continue
				}
				if len(got) != 0 {
					t.Errorf("phase %s (after %d) has file effects %q", p.Name, p.After, got)
				}
			}
			got[mode] = all
		})
	}
	if a, b := got[sandbox.ChangesUpperDir], got[sandbox.ChangesAPI]; a != nil && b != nil && !reflect.DeepEqual(a, b) {
		t.Errorf("upper dir and API disagree:\nupper %q\napi   %q", a, b)
	}
}

// TestHostileFilesystem: links planted towards host paths are reported as
// links and never read, odd names are escaped and kept, floods are bounded
// and counted.
func TestHostileFilesystem(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, mode := range []sandbox.ChangesMode{sandbox.ChangesUpperDir, sandbox.ChangesAPI} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "hostile")
			opts.Changes = mode
			opts.MaxListed = 50
			opts.FileLimits = overlay.Limits{MaxEntries: 500, MaxHashBytes: 1 << 20}
			// The API path costs a stat call per changed path per snapshot:
			// its flood is smaller.
			flood := 1000
			if mode == sandbox.ChangesAPI {
				flood, opts.FileLimits.MaxEntries = 120, 100
			}
			opts.Probes = steps(t, fmt.Sprintf(`{"plant_links":{},"odd_names":{},"huge":{"mb":4},"flood":{"count":%d}}`, flood))
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			links := map[string]string{}
			for _, f := range callsOf(r, "plant_links")[0].Effects.Files {
				if f.Type != "symlink" || f.SHA256 != "" {
					t.Errorf("planted link %s = %+v", f.Path, f)
				}
				links[f.Path] = f.LinkTarget
			}
			if !reflect.DeepEqual(links, map[string]string{"/workspace/x": "/etc/shadow", "/tmp/y": "/root", "/tmp/z": "/proc/1/root/etc/shadow"}) {
				t.Errorf("links = %v", links)
			}
			odd := map[string]bool{}
			for _, f := range callsOf(r, "odd_names")[0].Effects.Files {
				odd[f.Path] = f.PathEscaped
			}
			wantOdd := map[string]bool{`/workspace/new\nline.txt`: true, `/workspace/bad\xffname`: true, `/tmp/tab\tand\x1bescape`: true}
			if mode == sandbox.ChangesAPI {
				// The engine's JSON turns the invalid byte into U+FFFD.
				delete(wantOdd, `/workspace/bad\xffname`)
				wantOdd["/workspace/bad\uFFFDname"] = true
			}
			if !reflect.DeepEqual(odd, wantOdd) {
				t.Errorf("odd names = %v", odd)
			}
			huge := callsOf(r, "huge")[0].Effects.Files
			if len(huge) != 1 || huge[0].Size != 4<<20 || huge[0].SHA256 != "" {
				t.Errorf("huge = %+v, want its size and no hash past the bound", huge)
			}
			fl := callsOf(r, "flood")[0].Effects
			if len(fl.Files) != 50 || fl.FilesOmitted == 0 || !fl.FilesTruncated {
				t.Errorf("flood: %d listed, %d omitted, truncated %v", len(fl.Files), fl.FilesOmitted, fl.FilesTruncated)
			}
			if !strings.HasPrefix(fl.Files[0].Path, "/tmp/flood") {
				t.Errorf("flood lists %s", fl.Files[0].Path)
			}
		})
	}
}
