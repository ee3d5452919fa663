package scan

import (
	"encoding/json"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// withBoundary appends the boundary probes to plan (see
// probes.WithBoundary) unless --no-boundary. The path probes need the
// marker planted outside the workspace, so with --no-seed only the URL
// probes are made.
func (sc *scanner) withBoundary(tools []probes.Tool, plan []probes.Call, canary probes.Canary) []probes.Call {
	if sc.opts.NoBoundary {
		return plan
	}
	var m probes.BoundaryMarker
	if !sc.opts.NoSeed {
		m = sc.bait.Boundary
	}
	return probes.WithBoundary(tools, plan, canary, m)
}

// boundarySeeds are the files the boundary probes need planted.
func (sc *scanner) boundarySeeds() []probes.SeedFile {
	if sc.opts.NoBoundary || sc.opts.NoSeed {
		return nil
	}
	return []probes.SeedFile{sc.bait.BoundarySeed()}
}

// boundaryOutcome is what a boundary call tried and whether its result
// showed that the tool followed the path: the marker's secret or name in
// the result's text or its structured content, read before the report's
// redaction (nil for the other calls).
func boundaryOutcome(step probes.Call, call report.Call, structured any) *report.Boundary {
	pr := step.Boundary
	if pr == nil {
		return nil
	}
	b := &report.Boundary{Kind: pr.Kind.String(), Property: pr.Property, Target: pr.Target, Address: pr.Address, Port: pr.Port}
	if pr.Expect != "" {
		var st []byte
		if structured != nil {
			st, _ = json.Marshal(structured) // what was decoded from JSON marshals again
		}
		b.Returned = strings.Contains(call.Result, pr.Expect) || strings.Contains(call.Error, pr.Expect) || strings.Contains(string(st), pr.Expect)
	}
	return b
}
