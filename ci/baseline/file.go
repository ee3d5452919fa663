package baseline

import (
	"fmt"
	"sort"

	"github.com/mcpsandbox/mcpsandbox/ci/jsonfile"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// Version names the file format: v2 entries carry report.Fingerprint.
const Version = "mcpsandbox.baseline/v2"

// versionV1 files are still read; their fingerprints, computed another
// way, are recomputed from rule, tool and evidence.
const versionV1 = "mcpsandbox.baseline/v1"

// File is a baseline.
type File struct {
	Version  string  `json:"version"`
	Findings []Entry `json:"findings"`
}

// Entry is one accepted finding, named by its fingerprint (rule, tool and
// normalized evidence, not the call number, so that reordering probes
// keeps it); rule, tool and evidence are there for people to read.
type Entry struct {
	Rule        string   `json:"rule"`
	Tool        string   `json:"tool"`
	Evidence    []string `json:"evidence"`
	Fingerprint string   `json:"fingerprint"`
}

// fingerprint is the entry's fingerprint, computed if the file has none.
func (e Entry) fingerprint() string {
	if e.Fingerprint != "" {
		return e.Fingerprint
	}
	return report.Fingerprint(report.Finding{Rule: e.Rule, Tool: e.Tool, Evidence: e.Evidence})
}

// FromReport makes a baseline of the report's findings.
func FromReport(r *report.Report) File {
	f := File{Version: Version, Findings: []Entry{}}
	seen := map[string]bool{}
	for _, fd := range r.Findings {
		if fd.Rule == rules.BaselineStale {
			continue
		}
		fp := fd.Fingerprint
		if fp == "" {
			fp = report.Fingerprint(fd)
		}
		if seen[fp] {
			continue
		}
		seen[fp] = true
		ev := append([]string{}, fd.Evidence...)
		sort.Strings(ev)
		f.Findings = append(f.Findings, Entry{Rule: fd.Rule, Tool: fd.Tool, Evidence: ev, Fingerprint: fp})
	}
	sort.Slice(f.Findings, func(i, j int) bool {
		a, b := f.Findings[i], f.Findings[j]
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Fingerprint < b.Fingerprint
	})
	return f
}

// Write writes a baseline file.
func Write(path string, f File) error { return jsonfile.Write(path, "baseline", f) }

// Load reads a baseline file, v2 or v1. A v1 file comes back as v2: its
// fingerprints are recomputed.
func Load(path string) (File, error) {
	var f File
	if err := jsonfile.Read(path, "baseline", &f, func() string { return f.Version }, Version, versionV1); err != nil {
		return File{}, err
	}
	for i := range f.Findings {
		if f.Version == versionV1 {
			f.Findings[i].Fingerprint = ""
		}
		f.Findings[i].Fingerprint = f.Findings[i].fingerprint()
	}
	f.Version = Version
	return f, nil
}

// Apply marks the findings the baseline accepts (Baselined) and returns a
// baseline-stale finding, at the rule's default severity, for each entry
// no finding matches. A finding matches an entry when one of its keys is
// the entry's fingerprint; keys nil means the finding's own fingerprint.
func Apply(findings []report.Finding, f File, keys func(report.Finding) []string) []report.Finding {
	if keys == nil {
		keys = func(fd report.Finding) []string { return []string{report.Fingerprint(fd)} }
	}
	byFP := map[string]Entry{}
	for _, e := range f.Findings {
		byFP[e.fingerprint()] = e
	}
	matched := map[string]bool{}
	for i := range findings {
		for _, k := range keys(findings[i]) {
			if _, ok := byFP[k]; ok {
				findings[i].Baselined = true
				matched[k] = true
			}
		}
	}
	fps := make([]string, 0, len(byFP))
	for fp := range byFP {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	stale := []report.Finding{}
	for _, fp := range fps {
		if matched[fp] {
			continue
		}
		e := byFP[fp]
		// The entry's rule is in the evidence, so that two stale entries
		// that differ only by rule keep two fingerprints.
		ev := append([]string{fmt.Sprintf("baseline entry %s (%s)", fp, e.Rule)}, e.Evidence...)
		stale = append(stale, report.Finding{Rule: rules.BaselineStale, Severity: rules.DefaultSeverity(rules.BaselineStale), Tool: e.Tool,
			Message:  fmt.Sprintf("the baseline accepts a %s finding on %q (%s) that no longer occurs: remove it from the baseline", e.Rule, e.Tool, fp),
			Evidence: ev, EvidencePaths: make([]string, len(ev))})
	}
	return stale
}
