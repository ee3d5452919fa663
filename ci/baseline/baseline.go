// Package baseline records accepted findings and holds a report to them:
// an accepted finding does not fail the gate, a new one does, and so does
// an accepted one that no longer occurs, so that a fixed problem leaves no
// silent exception behind.
package baseline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/jsonfile"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Version names the file format.
const Version = "mcpsandbox.baseline/v1"

// File is a baseline.
type File struct {
	Version  string  `json:"version"`
	Findings []Entry `json:"findings"`
}

// Entry is one accepted finding. The fingerprint covers rule, tool and
// evidence, not the call number, so that reordering probes keeps it.
type Entry struct {
	Rule        string   `json:"rule"`
	Tool        string   `json:"tool"`
	Evidence    []string `json:"evidence"`
	Fingerprint string   `json:"fingerprint"`
}

// Fingerprint identifies a finding across runs.
func Fingerprint(f report.Finding) string {
	ev := append([]string(nil), f.Evidence...)
	sort.Strings(ev)
	h := sha256.Sum256([]byte(f.Rule + "\x00" + f.Tool + "\x00" + strings.Join(ev, "\x00")))
	return hex.EncodeToString(h[:8])
}

// FromReport makes a baseline of the report's findings.
func FromReport(r *report.Report) File {
	f := File{Version: Version, Findings: []Entry{}}
	seen := map[string]bool{}
	for _, fd := range r.Findings {
		if fd.Rule == "baseline-stale" {
			continue
		}
		fp := Fingerprint(fd)
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

// Load reads a baseline file.
func Load(path string) (File, error) {
	var f File
	err := jsonfile.Read(path, "baseline", &f, func() string { return f.Version }, Version)
	return f, err
}

// Apply marks the report's findings the baseline accepts and adds a
// baseline-stale finding for each entry that no longer occurs.
func Apply(r *report.Report, f File) {
	byFP := map[string]Entry{}
	for _, e := range f.Findings {
		fp := e.Fingerprint
		if fp == "" {
			fp = Fingerprint(report.Finding{Rule: e.Rule, Tool: e.Tool, Evidence: e.Evidence})
		}
		byFP[fp] = e
	}
	matched := map[string]bool{}
	for i := range r.Findings {
		fp := Fingerprint(r.Findings[i])
		if _, ok := byFP[fp]; ok {
			r.Findings[i].Baselined = true
			matched[fp] = true
		}
	}
	fps := make([]string, 0, len(byFP))
	for fp := range byFP {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	for _, fp := range fps {
		if matched[fp] {
			continue
		}
		e := byFP[fp]
		r.Findings = append(r.Findings, report.Finding{Rule: "baseline-stale", Severity: report.SeverityError, Tool: e.Tool,
			Message:  fmt.Sprintf("the baseline accepts a %s finding on %q (%s) that no longer occurs: remove it from the baseline", e.Rule, e.Tool, fp),
			Evidence: append([]string{"fingerprint " + fp}, e.Evidence...)})
	}
	report.SortFindings(r.Findings)
}
