package main

import (
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestHarmOutsideCallsFailsTheGate: a server that, outside any tool call
// (as it starts, while it answers initialize or tools/list, as it shuts
// down), sends a planted secret in a DNS name, connects out, deletes a
// workspace file and appends to ~/.bashrc gets server-level findings at
// the documented severities, and the default gate fails. Its one tool is
// honest: nothing is pinned on it.
func TestHarmOutsideCallsFailsTheGate(t *testing.T) {
	t.Parallel()
	for set, where := range map[string]string{
		"startup-hostile":    "startup",
		"initialize-hostile": "startup",
		"list-hostile":       "tools/list",
		"teardown-hostile":   "teardown",
	} {
		t.Run(set, func(t *testing.T) {
			dir := t.TempDir()
			code, b, stderr := scanFixture(t, []string{"--network", "sinkhole", "--workspace", seedWorkspaceDir(t),
				"--probes", writeFile(t, dir, "p.json", `{"no_op":{}}`)}, set)
			if code != 1 {
				t.Fatalf("exit %d, want 1; %s", code, stderr)
			}
			r := decode(t, b)
			want := map[string]report.Severity{
				"secret-exfiltration":       report.SeverityCritical,
				"shell-or-credential-files": report.SeverityError,
				"phase-workspace-changes":   report.SeverityError,
				"phase-network":             report.SeverityError, // every tool declares openWorldHint: false
			}
			got := map[string]report.Finding{}
			for _, f := range r.Findings {
				if f.Tool != "" {
					t.Errorf("a finding on tool %s: %+v", f.Tool, f)
				}
				got[f.Rule] = f
			}
			for rule, sev := range want {
				f, ok := got[rule]
				if !ok {
					t.Errorf("no %s finding; findings %+v", rule, r.Findings)
					continue
				}
				if f.Severity != sev {
					t.Errorf("%s at %s, want %s", rule, f.Severity, sev)
				}
				for _, ev := range f.Evidence {
					if !strings.HasPrefix(ev, where+": ") && !(where == "startup" && strings.HasPrefix(ev, "between (before the first call): ")) {
						t.Errorf("%s evidence %q, want it in %s", rule, ev, where)
					}
				}
				if f.Fingerprint == "" {
					t.Errorf("%s has no fingerprint", rule)
				}
			}
			// The tools are listed again after each call and at the end:
			// list-hostile does its harm at each listing.
			ev := got["phase-workspace-changes"].Evidence
			if len(ev) == 0 || (len(ev) > 1 && set != "list-hostile") {
				t.Errorf("phase-workspace-changes evidence %q", ev)
			}
			for _, e := range ev {
				if !strings.Contains(e, ": deleted /workspace/") {
					t.Errorf("phase-workspace-changes evidence %q", ev)
				}
			}
		})
	}
}

// TestHarmLeftBehindByACallIsThatCalls: a read-only tool that leaves a
// child doing the same harm a moment after it returned is judged for it:
// the "between" phase after a call is part of that call.
func TestHarmLeftBehindByACallIsThatCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, []string{"--network", "sinkhole", "--workspace", seedWorkspaceDir(t),
		"--probes", writeFile(t, dir, "p.json", `{"arm_later":{},"no_op":{}}`)}, "between-hostile")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	got := map[string]string{}
	for _, f := range r.Findings {
		got[f.Rule] = f.Tool
	}
	for _, rule := range []string{"secret-exfiltration", "shell-or-credential-files", "readonly-writes", "closed-world-network"} {
		if tool, ok := got[rule]; !ok || tool != "arm_later" {
			t.Errorf("%s on %q, want arm_later; findings %+v", rule, tool, r.Findings)
		}
	}
	for _, f := range r.Findings {
		if strings.HasPrefix(f.Rule, "phase-") || f.Tool == "no_op" {
			t.Errorf("misattributed: %+v", f)
		}
	}
}

// TestAFloodCannotBlindTheSnapshot: a server floods /tmp past the entry
// bound as it starts, then a read-only tool writes a workspace file,
// deletes one and overwrites a canary. The bound is a problem and a
// snapshot-truncated finding that fails the gate, and the tampering is
// still found (the workspace is walked first, copied or mounted).
func TestAFloodCannotBlindTheSnapshot(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"mount", "copy"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			flags := []string{"--max-files", "1000", "--workspace", seedWorkspaceDir(t), "--probes", writeFile(t, dir, "p.json", `{"tamper":{}}`)}
			if how == "copy" {
				flags = append(flags, "--copy-workspace")
			}
			code, b, stderr := scanFixture(t, flags, "flood-hostile")
			if code != 1 {
				t.Fatalf("exit %d, want 1; %s", code, stderr)
			}
			r := decode(t, b)
			if r.Sandbox.WorkspaceBy != how {
				t.Fatalf("workspace by %s", r.Sandbox.WorkspaceBy)
			}
			var ro *report.Finding
			truncated := false
			for i, f := range r.Findings {
				switch {
				case f.Rule == "readonly-writes" && f.Tool == "tamper":
					ro = &r.Findings[i]
				case f.Rule == "snapshot-truncated":
					truncated = f.Severity == report.SeverityError
				}
			}
			if !truncated {
				t.Errorf("no snapshot-truncated error; findings %+v", r.Findings)
			}
			if ro == nil {
				t.Fatalf("the tampering was not found; findings %+v", r.Findings)
			}
			ev := strings.Join(ro.Evidence, "\n")
			for _, want := range []string{"created /workspace/evil.txt", "deleted /workspace/", "modified /workspace/"} {
				if !strings.Contains(ev, want) {
					t.Errorf("readonly-writes evidence lacks %q:\n%s", want, ev)
				}
			}
			problem := false
			for _, p := range r.Problems {
				problem = problem || p.Kind == "snapshot"
			}
			if !problem {
				t.Errorf("no snapshot problem: %+v", r.Problems)
			}
		})
	}
}
