package rules

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Rule ids of the install phase: npm's lifecycle scripts and native
// builds, run offline in a sandbox of their own before the scan (see
// report.Install). Whatever the install does outside the package tree
// it builds is the package's doing before any client ran it.
const (
	InstallWritesOutsidePackage = "install-writes-outside-package"
	InstallNetwork              = "install-network"
	InstallScripts              = "install-scripts"
	InstallBackground           = "install-background"
)

// PhaseInstall names the install phase in report.Phases.
const PhaseInstall = report.PhaseInstall

func installRules() []Rule {
	return []Rule{
		{ID: InstallWritesOutsidePackage, Severity: report.SeverityError,
			Rationale:     "An install builds its package tree and nothing else: npm's cache and logs are kept inside the tree for the install, and node-gyp finds the headers without a download. A lifecycle script that writes elsewhere (the home directory, /tmp, /etc) leaves something behind on every machine that installs the package, before anyone runs it.",
			ServerMessage: "the package's install scripts (%s) changed %d file(s) outside the package tree"},
		{ID: InstallNetwork, Severity: report.SeverityError,
			Rationale:     "The install runs offline (npm rebuild --offline, the dependencies already fetched by the host): nothing it needs is on the network. A lifecycle script that resolves a name or connects somewhere downloads code or sends data at install time, where no tool annotation speaks for it.",
			ServerMessage: "the package's install scripts (%s) made %d network attempt(s)"},
		{ID: InstallBackground, Severity: report.SeverityError,
			Rationale:     "An install ends when its scripts do: npm waits for each. A process a lifecycle script started in the background and left running when the install ended (a daemon, a miner, a watcher) outlives the install on every machine that installs the package.",
			ServerMessage: "the package's install scripts (%s) left %d process(es) running when the install ended"},
		{ID: InstallScripts, Severity: report.SeverityNote,
			Rationale:     "The package or a dependency has lifecycle scripts (preinstall, install, postinstall, or a binding.gyp built by node-gyp): they ran in the install sandbox, and what they ran is recorded here so that it can be reviewed.",
			ServerMessage: "the package's install scripts ran (%s): %d script(s)"},
	}
}

// install raises the install phase's findings: its writes outside the
// package tree, its network attempts, the scripts it ran; a shell
// start-up or credential file written, and a planted secret sent out,
// are the rules of those names, labelled "install".
func (e *evaluator) install(r *report.Report) {
	if r.Install == nil {
		return
	}
	pkg := strings.TrimSuffix(r.Install.Package, "/")
	type item struct{ ev, path string }
	found := map[string][]item{}
	add := func(rule, ev, path string) {
		found[rule] = append(found[rule], item{PhaseInstall + ": " + ev, path})
	}
	for _, p := range r.Phases {
		if p.Name != PhaseInstall {
			continue
		}
		for _, f := range p.Effects.Files {
			ev := f.Change.String() + " " + f.Path
			switch {
			case IsShellOrCredentialFile(f.Path):
				add(ShellOrCredentialFiles, ev, f.Path)
			case pkg != "" && (f.Path == pkg || strings.HasPrefix(f.Path, pkg+"/")):
				// The tree the install builds.
			default:
				add(InstallWritesOutsidePackage, ev, f.Path)
			}
		}
		for _, n := range p.Effects.Network {
			for _, sec := range n.Secrets {
				add(SecretExfiltration, fmt.Sprintf("%s in %s", sec, describeNet(n)), "")
			}
			if s, ok := e.outward(n); ok {
				add(InstallNetwork, s, "")
			}
		}
		npm := npmProcesses(p.Effects.Processes)
		for _, pr := range p.Effects.Processes {
			if script, ok := lifecycleScript(pr, npm, r.Install.Command); ok {
				add(InstallScripts, "ran "+script, "")
			}
			// Not seen to end: still running when the install's command
			// ended (the sandbox then stops them all). A killed install
			// leaves everything so; it fails on its own.
			if pr.ExitCode == nil && pr.ExecError == "" && !r.Install.TimedOut {
				add(InstallBackground, "left running "+report.OneLine(strings.Join(pr.Argv, " ")), "")
			}
		}
	}
	for _, rule := range []string{SecretExfiltration, ShellOrCredentialFiles, InstallWritesOutsidePackage, InstallNetwork, InstallBackground, InstallScripts} {
		var ev, paths []string
		for _, it := range found[rule] {
			ev, paths = append(ev, it.ev), append(paths, it.path)
		}
		e.server(rule, 0, "", ev, paths)
	}
}

// npmProcesses are the process ids that ran npm (npm ARGS, or node
// .../npm-cli.js ARGS).
func npmProcesses(ps []report.Process) map[int]bool {
	out := map[int]bool{}
	for _, p := range ps {
		for i, a := range p.Argv {
			if i > 1 {
				break
			}
			if b := path.Base(a); b == "npm" || b == "npm-cli.js" {
				out[p.PID] = true
			}
		}
	}
	return out
}

// lifecycleScript says whether a process of the install is a script npm
// ran (npm runs each as sh -c SCRIPT, as its child), and which: the
// commands of a build's makefile, also sh -c, are make's, and the
// install's own command is not npm's.
func lifecycleScript(p report.Process, npm map[int]bool, command []string) (string, bool) {
	if len(p.Argv) != 3 || p.Argv[1] != "-c" || !npm[p.PPID] || slices.Equal(p.Argv, command) {
		return "", false
	}
	if sh := p.Argv[0]; sh != "sh" && !strings.HasSuffix(sh, "/sh") {
		return "", false
	}
	return report.OneLine(p.Argv[2]), true
}
