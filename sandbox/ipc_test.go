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
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// fileEffects renders a call's file changes as "change area path" lines.
func fileEffects(c report.Call) []string {
	out := []string{}
	for _, f := range c.Effects.Files {
		out = append(out, f.Change.String()+" "+f.Area+" "+f.Path)
	}
	sort.Strings(out)
	return out
}

// readonlyFinding says whether the verdict holds a readonly-writes finding
// on call seq.
func readonlyFinding(r *report.Report, seq int) bool {
	for _, f := range r.Findings {
		if f.Rule == "readonly-writes" && f.Call == seq && f.Severity == report.SeverityError {
			return true
		}
	}
	return false
}

// TestWritablePlacesOutsideTheOverlay: data kept in /dev/shm (written, or
// written through a mapping made before the call), a POSIX message queue
// and System V shared memory, queues and semaphores is each an effect of
// the read-only call that put it there, and fails the default gate; with
// and without the agent (without it, the server runs before the host
// view is opened), and with the API change source (the engine is local).
func TestWritablePlacesOutsideTheOverlay(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	want := map[string][]string{
		"shm_write": {"created shm /dev/shm/x", "modified shm /dev/shm/x"},
		"shm_poke":  {"modified shm /dev/shm/mapped", "modified shm /dev/shm/mapped"},
		"mq_send":   {"created ipc /dev/mqueue/fixture-q", "modified ipc /dev/mqueue/fixture-q"},
		"sysv_shm":  {"created ipc /proc/sysvipc/shm/0", "modified ipc /proc/sysvipc/shm/0"},
		"sysv_msg":  {"created ipc /proc/sysvipc/msg/0", "modified ipc /proc/sysvipc/msg/0"},
		"sysv_sem":  {"created ipc /proc/sysvipc/sem/0", "modified ipc /proc/sysvipc/sem/0"},
	}
	for _, run := range []struct {
		name    string
		agent   string
		changes sandbox.ChangesMode
	}{{"agent", "", sandbox.ChangesUpperDir}, {"no-agent", "none", sandbox.ChangesUpperDir}, {"api", "", sandbox.ChangesAPI}} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "ipc")
			opts.Agent, opts.Changes = run.agent, run.changes
			var js []string
			for tool := range want {
				js = append(js, fmt.Sprintf(`{"tool":%q,"arguments":{},"repeat":1}`, tool))
			}
			sort.Strings(js)
			opts.Probes = steps(t, "["+strings.Join(js, ",")+"]")
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			for _, p := range r.Problems {
				// The API source says once what it cannot see (held files).
				// And that it cannot watch the disk bound.
				if run.changes == sandbox.ChangesAPI && (p.Kind == "effects" || p.Kind == "disk") && strings.Contains(p.Message, "--changes api") {
					continue
				}
				t.Errorf("problem: %+v", p)
			}
			for tool, w := range want {
				// The first call makes the object, the second changes its
				// content (and nothing else, for shm_poke and a System V
				// segment or set).
				var calls []report.Call
				for _, c := range r.Calls {
					if c.Tool == tool {
						calls = append(calls, c)
					}
				}
				if len(calls) != 2 || calls[0].ErrorKind != "" || calls[0].IsError || calls[1].ErrorKind != "" || calls[1].IsError {
					t.Fatalf("%s calls = %+v", tool, calls)
				}
				for i, c := range calls {
					if got := fileEffects(c); !reflect.DeepEqual(got, w[i:i+1]) {
						t.Errorf("%s call %d effects = %q, want %q", tool, i+1, got, w[i:i+1])
					}
				}
			}
			// The mapping made at start, before the server answers
			// initialize, is an effect of startup or initialize (under the
			// agent startup ends at the server's exec), not a call's.
			if got := append(phaseFiles(r, "startup"), phaseFiles(r, "initialize")...); !reflect.DeepEqual(got, []string{"created shm /dev/shm/mapped"}) {
				t.Errorf("startup and initialize files = %q", got)
			}
			for _, p := range r.Phases {
				if p.Name != "startup" && p.Name != "initialize" && len(p.Effects.Files) != 0 {
					t.Errorf("phase %s (after %d) files = %+v", p.Name, p.After, p.Effects.Files)
				}
			}
			verdict.Finish(r, verdict.Config{})
			for _, c := range r.Calls {
				if _, ok := want[c.Tool]; ok && !readonlyFinding(r, c.Seq) {
					t.Errorf("%s (call %d): no readonly-writes finding", c.Tool, c.Seq)
				}
			}
			if !verdict.Fails(r, verdict.FailOn{Severity: report.SeverityError}) {
				t.Error("the default gate passes")
			}
		})
	}
}

func phaseFiles(r *report.Report, name string) []string {
	out := []string{}
	for _, p := range r.Phases {
		if p.Name == name {
			out = append(out, fileEffects(report.Call{Effects: p.Effects})...)
		}
	}
	return out
}

// TestRootWritesTheEnginesFiles: a server run as root (no capability, but
// the owner of /dev and of the files the engine binds into /etc) writes
// places the overlay does not hold: each is an effect.
func TestRootWritesTheEnginesFiles(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "ipc")
	opts.User = "0"
	opts.Probes = steps(t, `{"root_files":{}}`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	c := callsOf(res.Report, "root_files")
	if len(c) != 1 || c[0].ErrorKind != "" || c[0].IsError {
		t.Fatalf("root_files calls = %+v", c)
	}
	if got, want := fileEffects(c[0]), []string{"created other /dev/x", "modified system /etc/hosts"}; !reflect.DeepEqual(got, want) {
		t.Errorf("root_files effects = %q, want %q", got, want)
	}
	for _, f := range c[0].Effects.Files {
		// The engine's file holds the container's id: no hash, so that
		// the report stays the same from run to run.
		if f.Path == "/etc/hosts" && (f.SHA256Before != "" || f.SHA256 != "") {
			t.Errorf("/etc/hosts: sha256Before %q, sha256 %q: want none", f.SHA256Before, f.SHA256)
		}
	}
}

// TestImageVolumeIsObserved: an image's VOLUME is an anonymous volume the
// overlay does not hold; a write there is an effect all the same.
func TestImageVolumeIsObserved(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	img := sandboxtest.ImageWith(t, cli, []string{"VOLUME /data"},
		sandboxtest.ImageFile{Path: strings.TrimPrefix(sandboxtest.FixtureMount, "/"), Mode: 0o755, Source: sandboxtest.Fixture(t).Source},
		sandboxtest.ImageFile{Path: "data", Dir: true, Mode: 0o755, UID: 10001, GID: 10001},
		sandboxtest.ImageFile{Path: "data/seed.txt", Mode: 0o644, Content: []byte("from the image\n"), UID: 10001, GID: 10001})
	opts := scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Argv: []string{sandboxtest.FixtureMount, "ipc"}}}
	opts.Probes = steps(t, `{"data_write":{}}`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if len(r.Problems) != 0 {
		t.Errorf("problems: %+v", r.Problems)
	}
	c := callsOf(r, "data_write")
	if len(c) != 1 || c[0].ErrorKind != "" || c[0].IsError {
		t.Fatalf("data_write calls = %+v", c)
	}
	if got, want := fileEffects(c[0]), []string{"created other /data/kept.txt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data_write effects = %q, want %q", got, want)
	}
	// The volume's first content (the image's) is the baseline, and the
	// engine's mount point is no effect.
	for _, p := range r.Phases {
		for _, f := range p.Effects.Files {
			if f.Path != "/dev/shm/mapped" { // the ipc set maps it at start
				t.Errorf("phase %s: %+v", p.Name, f)
			}
		}
	}
}
