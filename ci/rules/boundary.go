package rules

import (
	"fmt"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// The boundary rules judge the boundary probes (calls of source
// "boundary", see report.Boundary): a path out of the canary project, a
// URL of the link-local or loopback address.
const (
	PathEscape   = "path-escape"
	SsrfFollowed = "ssrf-followed"
)

func boundaryRules() []Rule {
	return []Rule{
		{ID: PathEscape, Severity: report.SeverityError,
			Rationale: "Given a path that climbs out of the directory it was pointed at, the tool followed it: its result held a marker planted outside the workspace, or it changed files there. A model steered by untrusted text can read or write anything the server can.",
			Message:   "followed a path out of its root in call %d (%d evidence items)"},
		{ID: SsrfFollowed, Severity: report.SeverityError,
			Rationale: "Given a link-local (cloud metadata) or loopback URL, the tool connected to it: a model steered by untrusted text can reach services that only the machine itself should.",
			Message:   "fetched a link-local or loopback address in call %d (%d connection(s))"},
	}
}

// boundary raises the boundary rules on a boundary call. Its effects are
// judged by these rules and secret-exfiltration only: the hint rules judge
// the tool on its other calls, so that one traversal followed is one
// finding, not also a readonly-writes or closed-world-network one.
func (e *evaluator) boundary(c report.Call, effs []report.Effects) {
	b := c.Boundary
	if b == nil {
		return
	}
	var ev, paths []string
	if b.Returned {
		what := "content"
		if b.Kind == "path-dir" {
			what = "name"
		}
		ev, paths = append(ev, fmt.Sprintf("%s: the result held the %s of the marker at %s", b.Property, what, b.Target)), append(paths, b.Target)
	}
	if strings.HasPrefix(b.Kind, "path-") {
		for _, ef := range effs {
			for _, f := range ef.Files {
				if f.Path == b.Target || strings.HasPrefix(f.Path, b.Target+"/") {
					ev, paths = append(ev, f.Change.String()+" "+f.Path), append(paths, f.Path)
				}
			}
		}
	}
	e.add(PathEscape, c, "", ev, paths)
	if b.Kind == "url" {
		var net []string
		for _, ef := range effs {
			for _, n := range ef.Network {
				if reached(n, b) {
					net = append(net, describeNet(n)+" "+n.Result)
				}
			}
		}
		e.add(SsrfFollowed, c, "", net, nil)
	}
	e.exfiltration(c, effs)
}

// reached says whether network event n went to the probe's address: a
// connect (refused, unreachable or taken by the sinkhole: the attempt is
// what counts) or a request the sinkhole answered for it.
func reached(n report.NetEvent, b *report.Boundary) bool {
	switch n.Kind {
	case "connect":
		return n.Address == b.Address && (b.Port == 0 || n.Port == b.Port) && n.Protocol != "udp"
	case "http":
		return n.Method != "" && hostOnly(n.Host) == b.Address
	}
	return false
}
