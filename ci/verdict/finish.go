package verdict

import (
	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// Config is what a verdict takes besides the report.
type Config struct {
	// Policy changes severities, turns rules off, ignores tools and paths
	// and allows hosts; the zero Policy changes nothing.
	Policy rules.Policy
	// Contract, when set, is the tool list the server is held to; it is
	// compared only when the report lists tools.
	Contract *contract.File
	// Baseline, when set, accepts known findings and makes a
	// baseline-stale finding of each entry that no longer occurs.
	Baseline *baseline.File
}

// Suspects are the calls of rep to replay under cfg (see
// scan.Options.Suspects): those whose effects the rules would hold
// against them or an earlier call of their session.
func Suspects(rep *report.Report, cfg Config) []int {
	return rules.Suspects(rep, rules.Options{AllowedHosts: cfg.Policy.AllowedHosts})
}

// Finish replaces rep's findings, ignored list and summary with the
// verdict on its observations under cfg:
//
//  1. the rules, at their default severities (the policy's allowed hosts
//     are not outward; its coverage minimum raises coverage-low);
//  2. contract drift, when cfg.Contract is set and the report lists tools;
//  3. the baseline, matched against the findings before the policy, so an
//     entry whose finding still occurs but is ignored is not stale;
//  4. the policy (off, tool and path ignores, severities) over every
//     finding, contract and baseline-stale ones included, each drop
//     counted in rep.Ignored;
//  5. fingerprints, the order of findings and ignores, and the summary
//     with each tool's coverage (report.Coverage: exercised, errored or
//     not called).
//
// Finish is idempotent: it reads only the observations, never the
// findings it wrote before. Process ids are left as the sandbox
// normalized them.
func Finish(rep *report.Report, cfg Config) {
	rep.Rounds = nil
	conclude(rep, observe(rep, cfg), cfg)
}

// observe is steps 1 and 2 of Finish: the findings rep's observations
// give, before the baseline and the policy.
func observe(rep *report.Report, cfg Config) []report.Finding {
	found := rules.Evaluate(rep, rules.Options{AllowedHosts: cfg.Policy.AllowedHosts, MinCoverage: cfg.Policy.Coverage.Min})
	if cfg.Contract != nil && len(rep.Tools) > 0 {
		found = append(found, contract.Compare(*cfg.Contract, rep)...)
	}
	return found
}

// conclude is steps 3 to 5 of Finish over found, written to rep; with
// rep.Rounds set, the findings' rounds are merged too (see FinishRounds).
func conclude(rep *report.Report, found []report.Finding, cfg Config) {
	if cfg.Baseline != nil {
		found = append(found, baseline.Apply(found, *cfg.Baseline, baselineKeys(cfg.Policy))...)
	}
	rep.Findings, rep.Ignored = cfg.Policy.Apply(found)
	for i := range rep.Findings {
		rep.Findings[i].Fingerprint = report.Fingerprint(rep.Findings[i])
	}
	if rep.Rounds != nil {
		rep.Findings = unionRounds(rep.Findings, rep.Rounds.Run)
	}
	report.SortFindings(rep.Findings)
	report.SortIgnored(rep.Ignored)
	rep.Finish()
}

// baselineKeys are the fingerprints a finding matches a baseline entry
// by: its own, and the one it has once the policy's path ignores dropped
// evidence, since a baseline is written from a report after the policy.
func baselineKeys(p rules.Policy) func(report.Finding) []string {
	return func(f report.Finding) []string {
		keys := []string{report.Fingerprint(f)}
		if t := p.TrimPaths(f); len(t.Evidence) > 0 && len(t.Evidence) < len(f.Evidence) {
			keys = append(keys, report.Fingerprint(t))
		}
		return keys
	}
}
