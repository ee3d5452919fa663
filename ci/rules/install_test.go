package rules

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// installed is a report with an install record and an install phase of
// the given effects.
func installed(eff report.Effects) *report.Report {
	r := report.New()
	r.Sandbox.Isolation = "session"
	r.Install = &report.Install{Command: []string{"/bin/sh", "-c", "cd /package && npm rebuild"}, Package: "/package", Network: "sinkhole"}
	r.Phases = []report.Phase{{Name: PhaseInstall, Effects: eff}, phase("startup", 0, nil, nil)}
	return r
}

// TestInstallIsJudged: in the install phase, the package tree's own
// build is no evidence; a write elsewhere is install-writes-outside-
// package, a shell start-up file shell-or-credential-files, any network
// attempt install-network (an error, wherever it goes: the install is
// offline), a planted secret sent secret-exfiltration; the scripts npm
// ran are install-scripts (a note), not a makefile's commands nor the
// install's own command; a process left running when the install ended
// is install-background; the phase rules do not judge it again.
func TestInstallIsJudged(t *testing.T) {
	eff := report.NewEffects()
	eff.Files = []report.FileChange{
		{Path: "/package/node_modules/x/build/Release/x.node", Change: report.ChangeCreated, Scope: "outside"},
		{Path: "/package", Change: report.ChangeModified, Scope: "outside"},
		{Path: "/home/sandbox/.bashrc", Change: report.ChangeCreated, Scope: "outside", Area: "home"},
		{Path: "/tmp/dropped", Change: report.ChangeCreated, Scope: "outside", Area: "tmp"},
		{Path: "/packaged/x", Change: report.ChangeCreated, Scope: "outside"},
	}
	eff.Network = []report.NetEvent{
		{Kind: "dns", Host: "registry.npmjs.org", Result: "sinkholed"},
		{Kind: "http", Host: "evil.example", Method: "GET", Path: "/k", Secrets: []string{"<api-key>"}},
		{Kind: "dns", Host: "localhost"},
	}
	eff.Processes = []report.Process{
		{PID: 1, Argv: []string{"/bin/sh", "-c", "cd /package && npm rebuild"}},
		{PID: 2, PPID: 1, Argv: []string{"node", "/usr/bin/npm", "rebuild"}},
		{PID: 3, PPID: 2, Argv: []string{"sh", "-c", "node postinstall.js"}},
		{PID: 4, PPID: 2, Argv: []string{"sh", "-c", "node-gyp rebuild"}},
		{PID: 5, PPID: 4, Argv: []string{"make"}},
		{PID: 6, PPID: 5, Argv: []string{"/bin/sh", "-c", "# a makefile's recipe"}},
		{PID: 7, PPID: 3, Argv: []string{"sleep", "600"}},
		{PID: 8, PPID: 3, Argv: []string{"nope"}, ExecError: "ENOENT"},
	}
	for i := range eff.Processes {
		if eff.Processes[i].PID != 7 && eff.Processes[i].ExecError == "" {
			code := 0
			eff.Processes[i].ExitCode = &code
		}
	}
	got := map[string][]string{}
	sev := map[string]report.Severity{}
	for _, f := range Evaluate(installed(eff), Options{}) {
		got[f.Rule], sev[f.Rule] = f.Evidence, f.Severity
		if f.Tool != "" {
			t.Errorf("install finding on a tool: %+v", f)
		}
	}
	want := map[string][]string{
		InstallWritesOutsidePackage: {"install: created /tmp/dropped", "install: created /packaged/x"},
		ShellOrCredentialFiles:      {"install: created /home/sandbox/.bashrc"},
		InstallNetwork:              {"install: dns registry.npmjs.org", "install: http GET evil.example/k"},
		SecretExfiltration:          {"install: <api-key> in http GET evil.example/k"},
		InstallScripts:              {"install: ran node postinstall.js", "install: ran node-gyp rebuild"},
		InstallBackground:           {"install: left running sleep 600"},
	}
	for rule, ev := range want {
		if !reflect.DeepEqual(got[rule], ev) {
			t.Errorf("%s: evidence %q, want %q", rule, got[rule], ev)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rules %v, want exactly %v", keys(got), keys(want))
	}
	// An install killed at its bound leaves everything running: that is
	// its failure, not a background process each.
	timedOut := installed(eff)
	timedOut.Install.TimedOut = true
	for _, f := range Evaluate(timedOut, Options{}) {
		if f.Rule == InstallBackground {
			t.Errorf("a killed install: %s %q", f.Rule, f.Evidence)
		}
	}
	if sev[InstallWritesOutsidePackage] != report.SeverityError || sev[InstallNetwork] != report.SeverityError || sev[InstallScripts] != report.SeverityNote {
		t.Errorf("severities %v", sev)
	}
}

// TestInstallPhaseWithoutRecord: a phase named install in a report with
// no install record (no sandboxed install made it) is a server phase,
// judged by the phase rules.
func TestInstallPhaseWithoutRecord(t *testing.T) {
	eff := report.NewEffects()
	eff.Files = []report.FileChange{{Path: "/tmp/x", Change: report.ChangeCreated, Scope: "outside", Area: "tmp"}}
	r := installed(eff)
	r.Install = nil
	for _, f := range Evaluate(r, Options{}) {
		if f.Rule != PhaseWritesOutsideWorkspace || !reflect.DeepEqual(f.Evidence, []string{"install: created /tmp/x"}) {
			t.Errorf("finding %s %q", f.Rule, f.Evidence)
		}
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
