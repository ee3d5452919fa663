package rules

import (
	"fmt"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Rule ids of what the server does outside any tool call, and of the
// snapshot's bounds.
const (
	// ShellOrCredentialFiles holds for calls and phases alike.
	ShellOrCredentialFiles      = "shell-or-credential-files"
	PhaseWorkspaceChanges       = "phase-workspace-changes"
	PhaseWorkspaceCreates       = "phase-workspace-creates"
	PhaseNetwork                = "phase-network"
	PhaseWritesOutsideWorkspace = "phase-writes-outside-workspace"
	SnapshotTruncated           = "snapshot-truncated"
)

// outsideCalls is how a server-level finding's message says where.
const outsideCalls = "outside any tool call"

func phaseRules() []Rule {
	return []Rule{
		{ID: ShellOrCredentialFiles, Severity: report.SeverityError,
			Rationale: "Whatever its hints, a server that writes a shell start-up file or a credential file (" + shortList + ") reaches past the sandbox into the user's next shell, login or deployment: that is persistence or credential tampering, not a side effect of serving tools.",
			Message:   "call %d wrote %d shell start-up or credential file(s)", ServerMessage: "the server, " + outsideCalls + " (%s), wrote %d shell start-up or credential file(s)"},
		{ID: PhaseWorkspaceChanges, Severity: report.SeverityError,
			Rationale:     "Nobody asked the server to touch the workspace outside a tool call: modifying or deleting a file that was there is an unrequested destructive change to the user's files.",
			ServerMessage: "the server, " + outsideCalls + " (%s), modified or deleted %d file(s) that existed in the workspace"},
		{ID: PhaseWorkspaceCreates, Severity: report.SeverityWarning,
			Rationale:     "Nobody asked the server to write to the workspace outside a tool call; a new file there (a hook, a workflow, a config) changes the user's project, though it destroys nothing. Runtimes keep their caches elsewhere.",
			ServerMessage: "the server, " + outsideCalls + " (%s), created %d file(s) in the workspace"},
		{ID: PhaseNetwork, Severity: report.SeverityWarning,
			Rationale:     "Outside a tool call no client asked for anything: a network attempt then (a DNS name, a connection, a request) is the server's own, toward a host the policy does not allow. An error when every tool declares openWorldHint: false, since then the server claims no open world at all.",
			ServerMessage: "the server, " + outsideCalls + " (%s), made %d network attempt(s) beyond the sandbox"},
		{ID: PhaseWritesOutsideWorkspace, Severity: report.SeverityNote,
			Rationale:     "Runtimes write caches and logs as they start and stop (~/.npm, /tmp): recorded, not failing, so that they can be seen and ignored by path.",
			ServerMessage: "the server, " + outsideCalls + " (%s), changed %d file(s) outside the workspace"},
		{ID: SnapshotTruncated, Severity: report.SeverityError,
			Rationale:     "The file snapshot hit a bound: the walk stopped (changes past it were not seen) or more changes were seen than are listed (those were counted, not judged). What was not judged cannot be cleared.",
			ServerMessage: "the file snapshot hit a bound in %s (%d place(s)): changes went unseen or unjudged"},
	}
}

// ShellAndCredentialFiles are the shell start-up and credential files, as
// globs relative to a home directory ("*" within a path segment, "**"
// across): writing one is shell-or-credential-files, in a call or out of
// one. They are matched under every home (Homes).
var ShellAndCredentialFiles = []string{
	// Shells and logins: run at the user's next shell or session.
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".config/fish/**",
	".pam_environment", ".xprofile", ".xinitrc", ".xsessionrc",
	".config/autostart/**", ".config/systemd/user/**", ".config/environment.d/**",
	".vimrc", ".config/nvim/**",
	// Credentials and the configs that hold or use them.
	".ssh/**", ".gnupg/**", ".netrc", ".git-credentials", ".gitconfig", ".config/git/**",
	".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".config/pip/**", ".pip/**",
	".aws/**", ".azure/**", ".config/gcloud/**", ".kube/**", ".docker/config.json",
	".config/gh/**", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".m2/settings.xml", ".terraformrc", ".terraform.d/credentials.tfrc.json",
	".password-store/**", ".local/share/keyrings/**",
}

// SystemStartupFiles are absolute globs of the system-wide start-up and
// account files (only root can write them; --user 0 runs the server so).
var SystemStartupFiles = []string{
	"/etc/profile", "/etc/profile.d/**", "/etc/bash.bashrc", "/etc/bashrc", "/etc/zsh/**", "/etc/environment",
	"/etc/ld.so.preload", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/sudoers", "/etc/sudoers.d/**",
	"/etc/crontab", "/etc/cron.d/**",
}

// Homes are the home directories ShellAndCredentialFiles are matched
// under: root's, and every user's under /home (the sandbox user's is
// /home/sandbox).
var Homes = []string{"/root", "/home/*"}

// shortList is the start of the list, for the rule's rationale.
const shortList = "~/.bashrc, ~/.profile, ~/.ssh/authorized_keys, ~/.aws/credentials, ~/.npmrc and the like"

// IsShellOrCredentialFile reports whether path (as the report has it) is
// a shell start-up or credential file.
func IsShellOrCredentialFile(path string) bool {
	for _, g := range SystemStartupFiles {
		if glob(g, path) {
			return true
		}
	}
	for _, h := range Homes {
		for _, g := range ShellAndCredentialFiles {
			if glob(h+"/"+g, path) {
				return true
			}
		}
	}
	return false
}

// phaseLabel names where a server-level effect happened, in evidence.
// The startup phase ends at the server's exec, so what a server does as
// it starts lands on either side of that mark, by timing: the startup
// and initialize phases share one label, "startup" (until the server
// answered initialize), so that the evidence, and the fingerprint, do not
// depend on the clock.
func phaseLabel(p report.Phase) string {
	switch {
	case p.Name == "startup" || p.Name == "initialize":
		return "startup"
	case p.Name == "between" && p.After == 0:
		return "between (before the first call)"
	case p.Name == "between":
		return fmt.Sprintf("between (after call %d)", p.After)
	}
	return p.Name
}

// serverPhases are the phases the server-level rules judge: all but the
// "between" phases after a call, which are part of that call (what it
// left running did them) and judged with it. A "between" phase after a
// call the report does not have is the server's: nothing is left
// unjudged.
func serverPhases(r *report.Report) []report.Phase {
	calls := map[int]bool{}
	for _, c := range r.Calls {
		calls[c.Seq] = true
	}
	var out []report.Phase
	for _, p := range r.Phases {
		if p.Name == "between" && p.After > 0 && calls[p.After] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// phases raises the server-level findings on what happened outside any
// tool call. Processes started there are recorded, not judged: launchers
// (npx, sh) start them as a matter of course.
func (e *evaluator) phases(r *report.Report) {
	type item struct{ ev, path string }
	found := map[string][]item{}
	add := func(rule, label, ev, path string) {
		found[rule] = append(found[rule], item{label + ": " + ev, path})
	}
	for _, p := range serverPhases(r) {
		if p.Name == PhaseInstall && r.Install != nil {
			continue // judged by the install rules (install.go)
		}
		label := phaseLabel(p)
		for _, f := range p.Effects.Files {
			ev := f.Change.String() + " " + f.Path
			switch {
			case IsShellOrCredentialFile(f.Path):
				add(ShellOrCredentialFiles, label, ev, f.Path)
			case f.Scope == "workspace" && f.Change == report.ChangeCreated:
				add(PhaseWorkspaceCreates, label, ev, f.Path)
			case f.Scope == "workspace" && f.Change == report.ChangeDeleted && e.scratch.ownInPhase(f.Path):
				// The server's own scratch, made during the scan and named
				// by no argument: its removal destroys nothing of the user's.
			case f.Scope == "workspace":
				add(PhaseWorkspaceChanges, label, ev, f.Path)
			default:
				if name, own := e.owned[f.Path]; own {
					// The server's own bookkeeping, named as the server's
					// finding names it: whether a phase caught its lock made
					// or removed, or its log made or grown, is timing.
					ev, f.Path = "changed "+name, name
				}
				add(PhaseWritesOutsideWorkspace, label, ev, f.Path)
			}
		}
		for _, n := range p.Effects.Network {
			for _, sec := range n.Secrets {
				add(SecretExfiltration, label, fmt.Sprintf("%s in %s", sec, describeNet(n)), "")
			}
			if s, ok := e.outward(n); ok && !launcherHost(n) {
				add(PhaseNetwork, label, s, "")
			}
		}
	}
	closed := closedWorld(r)
	for _, rule := range []string{SecretExfiltration, ShellOrCredentialFiles, PhaseWorkspaceChanges, PhaseWorkspaceCreates, PhaseNetwork, PhaseWritesOutsideWorkspace} {
		var ev, paths []string
		for _, it := range found[rule] {
			ev, paths = append(ev, it.ev), append(paths, it.path)
		}
		sev, hint := report.Severity(0), ""
		if rule == PhaseNetwork && closed {
			sev, hint = report.SeverityError, "openWorldHint: false"
		}
		e.server(rule, sev, hint, ev, paths)
	}
}

// LauncherHosts are the package registries launchers ask, by name, as
// they start a server (npx and npm exec look up registry.npmjs.org for
// their update check even with --offline; uvx and pip ask PyPI): outside
// calls, an attempt to one of these names is the launcher's, recorded in
// the phase and not a phase-network finding. A secret sent to one is
// secret-exfiltration all the same, and a tool call that reaches one is
// judged as any other.
var LauncherHosts = []string{"registry.npmjs.org", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org"}

// launcherHost reports whether n is addressed by name to one of
// LauncherHosts.
func launcherHost(n report.NetEvent) bool {
	h := n.Host
	switch n.Kind {
	case "http":
		h = hostOnly(h)
	case "dns", "tls":
	default:
		return false
	}
	for _, l := range LauncherHosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), l) {
			return true
		}
	}
	return false
}

// closedWorld reports whether the server lists tools and every one of
// them declares openWorldHint: false.
func closedWorld(r *report.Report) bool {
	for _, t := range r.Tools {
		if !isFalse(t.Hints.OpenWorld) {
			return false
		}
	}
	return len(r.Tools) > 0
}

// truncation raises snapshot-truncated where a call's or a phase's file
// effects hit a bound: the walk stopped (FilesTruncated: changes past it
// were not seen) or changes were counted past the listing bound
// (FilesOmitted: seen, not listed, so judged by no rule). Both fail the
// default gate.
func (e *evaluator) truncation(r *report.Report) {
	var ev []string
	note := func(where string, eff report.Effects) {
		if eff.FilesTruncated {
			ev = append(ev, where+": the change walk stopped at its bound")
		}
		if eff.FilesOmitted > 0 {
			ev = append(ev, fmt.Sprintf("%s: %d change(s) past the listing bound, counted, not listed", where, eff.FilesOmitted))
		}
	}
	for _, p := range serverPhases(r) {
		note(phaseLabel(p), p.Effects)
	}
	after := afterCalls(r)
	for _, c := range r.Calls {
		note(fmt.Sprintf("call %d (%s)", c.Seq, c.Tool), c.Effects)
		for _, eff := range after[c.Seq] {
			note(fmt.Sprintf("between (after call %d)", c.Seq), eff)
		}
	}
	e.server(SnapshotTruncated, 0, "", ev, nil)
}

// afterCalls maps a call to the effects of the "between" phases after it.
func afterCalls(r *report.Report) map[int][]report.Effects {
	after := map[int][]report.Effects{}
	for _, ph := range r.Phases {
		if ph.Name == "between" && ph.After > 0 {
			after[ph.After] = append(after[ph.After], ph.Effects)
		}
	}
	return after
}

// server raises a server-level finding (no tool, no call) of rule with
// its evidence, once per distinct item, at sev (0: the rule's default).
func (e *evaluator) server(rule string, sev report.Severity, hint string, evidence, paths []string) {
	if len(evidence) == 0 {
		return
	}
	rl, _ := ByID(rule)
	if sev == 0 {
		sev = rl.Severity
	}
	f := report.Finding{Rule: rule, Severity: sev, Hint: hint, Isolation: e.isolation}
	f.Evidence, f.EvidencePaths = distinct(evidence, paths)
	f.Message = message(rl, f)
	e.out = append(e.out, f)
}

// where lists the places a server-level finding's evidence names (the
// text before each item's ": "), in order, once each.
func where(evidence []string) string {
	var out []string
	seen := map[string]bool{}
	for _, ev := range evidence {
		w, _, _ := strings.Cut(ev, ": ")
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}
