package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ReadHasEffects is raised when a read of a surface other than tools (a
// resources/read, a prompts/get, a completion/complete) changed files or
// left processes running.
const ReadHasEffects = "read-has-effects"

func readHasEffectsRule() Rule {
	return Rule{ID: ReadHasEffects, Severity: report.SeverityError,
		Rationale:     `Resources, prompts and completions are what a client reads, with no annotation to warn it: the MCP specification has resources "provide data" and prompts "provide structured messages", and lets clients read them unasked. A read that changes files or leaves a process running is a side effect no client expects.`,
		ServerMessage: "the server's %s changed %d thing(s)"}
}

// SurfaceListTruncated is raised when a list of resources, resource
// templates or prompts was cut at one of the runner's bounds.
const SurfaceListTruncated = "surface-list-truncated"

func surfaceListRule() Rule {
	return Rule{ID: SurfaceListTruncated, Severity: report.SeverityError,
		Rationale: "The server's resource, template or prompt list broke one of the runner's bounds (pages, bytes, items, a message over the size or nesting bound): what was past it was neither read nor judged, so no verdict can clear it."}
}

// surfaceListCut raises surface-list-truncated, a finding on the server,
// naming each list cut.
func surfaceListCut(r *report.Report) []report.Finding {
	if len(r.Server.SurfacesTruncated) == 0 {
		return nil
	}
	rl := surfaceListRule()
	f := report.Finding{Rule: rl.ID, Severity: rl.Severity, Isolation: r.Sandbox.Isolation}
	for _, m := range r.Server.SurfacesTruncated {
		f.Evidence, f.EvidencePaths = append(f.Evidence, m+" truncated"), append(f.EvidencePaths, "")
	}
	f.Message = fmt.Sprintf("%d list(s) of the server's resources or prompts were cut at a bound; %s", len(f.Evidence), rl.Rationale)
	return []report.Finding{f}
}

// readDescribe names a read in evidence and messages.
func readDescribe(rd report.Read) string {
	target := rd.Target
	if rd.URI != "" && rd.URI != rd.Target {
		target += " as " + rd.URI
	}
	return fmt.Sprintf("%s %s (read %d)", rd.Method, target, rd.Seq)
}

// reads raises the rules on the reads: read-has-effects for what a read
// changed (files, but not those the server owns, see ownedSet; processes
// left running), secret-exfiltration for planted secrets it sent out, and
// secret-disclosed for planted secrets in what it returned. Each is a
// server-level finding (no tool), its evidence naming the read. A read's
// network attempts are not effects: fetching is reading.
func reads(r *report.Report, owned map[string]bool, isolation string) []report.Finding {
	var out []report.Finding
	rl := readHasEffectsRule()
	var disclosed, disclosedPaths []string
	for _, rd := range r.Reads {
		what := readDescribe(rd)
		var ev, paths []string
		for _, f := range rd.Effects.Files {
			if owned[f.Path] {
				continue
			}
			ev, paths = append(ev, what+": "+f.Change.String()+" "+f.Path), append(paths, f.Path)
		}
		for _, p := range rd.Effects.Processes {
			if p.Background {
				ev, paths = append(ev, what+": left running "+argv(p)), append(paths, "")
			}
		}
		if len(ev) > 0 {
			f := report.Finding{Rule: rl.ID, Severity: rl.Severity, Isolation: isolation}
			f.Evidence, f.EvidencePaths = distinct(ev, paths)
			f.Message = message(rl, f)
			out = append(out, f)
		}
		var leaked []string
		for _, n := range rd.Effects.Network {
			for _, sec := range n.Secrets {
				leaked = append(leaked, fmt.Sprintf("%s: %s in %s", what, sec, describeNet(n)))
			}
		}
		if len(leaked) > 0 {
			x, _ := ByID(SecretExfiltration)
			f := report.Finding{Rule: x.ID, Severity: x.Severity, Isolation: isolation}
			f.Evidence, f.EvidencePaths = distinct(leaked, nil)
			f.Message = message(x, f)
			out = append(out, f)
		}
		for _, role := range rd.Disclosed {
			disclosed, disclosedPaths = append(disclosed, fmt.Sprintf("%s in the result of %s", role, what)), append(disclosedPaths, "")
		}
	}
	if len(disclosed) > 0 {
		d := secretDisclosedRule()
		f := report.Finding{Rule: d.ID, Severity: d.Severity, Isolation: isolation}
		f.Evidence, f.EvidencePaths = distinct(disclosed, disclosedPaths)
		f.Message = message(d, f)
		out = append(out, f)
	}
	return out
}
