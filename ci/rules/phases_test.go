package rules

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func phase(name string, after int, files []report.FileChange, net []report.NetEvent) report.Phase {
	eff := report.NewEffects()
	eff.Files, eff.Network = files, net
	return report.Phase{Name: name, After: after, Effects: eff}
}

// TestPhasesAreJudged: outside calls, a secret sent is critical; a
// workspace file modified or deleted, or a shell or credential file
// written, is an error; a created workspace file a warning; a network
// attempt a warning (an error when every tool declares a closed world),
// not when it is a launcher's registry lookup; other writes are notes;
// the "between" phase after a call is that call's, not the server's.
func TestPhasesAreJudged(t *testing.T) {
	closed := report.Tool{Name: "closed", Hints: report.Hints{OpenWorld: b(false)}}
	open := report.Tool{Name: "open"}
	bashrc := report.FileChange{Path: "/home/sandbox/.bashrc", Change: report.ChangeCreated, Type: "file", Scope: "outside"}
	leak := report.NetEvent{Kind: "dns", Host: "secret.example.com", Result: "nxdomain", Secrets: []string{"aws-secret-access-key"}}
	npm := report.NetEvent{Kind: "dns", Host: "registry.npmjs.org", Result: "nxdomain"}
	for _, tc := range []struct {
		tools []report.Tool
		net   report.Severity
	}{{[]report.Tool{closed}, report.SeverityError}, {[]report.Tool{closed, open}, report.SeverityWarning}} {
		r := scenario()
		r.Tools = tc.tools
		for _, tl := range tc.tools {
			r.Calls = append(r.Calls, report.Call{Seq: len(r.Calls) + 1, Tool: tl.Name, Effects: report.NewEffects()})
		}
		r.Phases = []report.Phase{
			phase("startup", 0, []report.FileChange{tmpWrite}, []report.NetEvent{npm}),
			phase("initialize", 0, []report.FileChange{bashrc}, []report.NetEvent{leak}),
			phase("tools/list", 0, []report.FileChange{del}, nil),
			phase("between", 0, []report.FileChange{wsWrite}, nil),
			phase("between", 1, []report.FileChange{rewrote}, nil), // the call's
			phase("teardown", 0, nil, []report.NetEvent{outward}),
		}
		fs := Evaluate(r, Options{})
		got := map[string]report.Finding{}
		for _, f := range fs {
			if f.Tool != "" {
				t.Errorf("server-level finding on a tool: %+v", f)
			}
			got[f.Rule] = f
		}
		want := map[string]struct {
			sev report.Severity
			ev  []string
		}{
			SecretExfiltration:          {report.SeverityCritical, []string{"startup: aws-secret-access-key in dns query secret.example.com"}},
			ShellOrCredentialFiles:      {report.SeverityError, []string{"startup: created /home/sandbox/.bashrc"}},
			PhaseWorkspaceChanges:       {report.SeverityError, []string{"tools/list: deleted /workspace/seed"}},
			PhaseWorkspaceCreates:       {report.SeverityWarning, []string{"between (before the first call): created /workspace/a"}},
			PhaseNetwork:                {tc.net, []string{"startup: dns secret.example.com", "teardown: connect 203.0.113.7:443/tcp ENETUNREACH"}},
			PhaseWritesOutsideWorkspace: {report.SeverityNote, []string{"startup: created /tmp/x"}},
		}
		if len(got) != len(want) {
			t.Errorf("findings %+v", fs)
		}
		for rule, w := range want {
			f := got[rule]
			if f.Severity != w.sev || !reflect.DeepEqual(f.Evidence, w.ev) || f.Message == "" {
				t.Errorf("%s: %s %q, want %s %q (%s)", rule, f.Severity, f.Evidence, w.sev, w.ev, f.Message)
			}
		}
	}
}

// TestSnapshotTruncatedFailsTheGate: a walk stopped at its bound, or
// changes counted past the listing bound, in a call or a phase, is an
// error finding.
func TestSnapshotTruncatedFailsTheGate(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	r := scenario(call{tool: ro})
	if fs := Evaluate(r, Options{}); len(fs) != 0 {
		t.Fatalf("nothing truncated: %+v", fs)
	}
	st := phase("startup", 0, nil, nil)
	st.Effects.FilesTruncated = true
	r.Phases = append(r.Phases, st)
	r.Calls[0].Effects.FilesOmitted = 7
	fs := Evaluate(r, Options{})
	if len(fs) != 1 || fs[0].Rule != SnapshotTruncated || fs[0].Severity != report.SeverityError ||
		!reflect.DeepEqual(fs[0].Evidence, []string{"startup: the change walk stopped at its bound", "call 1 (ro): 7 change(s) past the listing bound, counted, not listed"}) {
		t.Errorf("findings %+v", fs)
	}
}

// TestShellAndCredentialFiles: the list matches under every home and the
// system's start-up files, and nothing else.
func TestShellAndCredentialFiles(t *testing.T) {
	for p, want := range map[string]bool{
		"/home/sandbox/.bashrc": true, "/root/.profile": true, "/home/sandbox/.ssh/authorized_keys": true,
		"/home/sandbox/.aws/credentials": true, "/home/sandbox/.npmrc": true, "/etc/profile.d/x.sh": true,
		"/home/sandbox/.config/fish/config.fish": true, "/etc/ld.so.preload": true,
		"/home/sandbox/.npm/_cacache/x": false, "/workspace/.bashrc": false, "/tmp/.profile": false, "/home/sandbox/.bashrc.bak": false,
	} {
		if got := IsShellOrCredentialFile(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}
