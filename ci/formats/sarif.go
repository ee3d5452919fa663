package formats

import (
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// SARIF 2.1.0, the parts mcpsandbox fills.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool          `json:"tool"`
	Results    []sarifResult      `json:"results"`
	Properties sarifRunProperties `json:"properties"`
}

// sarifRunProperties is the run's property bag: the coverage, which says
// what the results (and their absence) are worth.
type sarifRunProperties struct {
	Coverage sarifCoverage `json:"mcpsandbox/coverage"`
}

type sarifCoverage struct {
	Summary   string                `json:"summary"` // "exercised 11 of 13 tools (84%): ..."
	Tools     int                   `json:"tools"`
	Exercised int                   `json:"exercised"`
	Errored   int                   `json:"errored"`
	NotCalled int                   `json:"notCalled"`
	ByTool    []report.ToolCoverage `json:"byTool"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	FullDescription      sarifMessage `json:"fullDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties sarifProperties `json:"properties"`
}

// sarifProperties is the property bag GitHub code scanning reads: a
// security-severity score, and tags (security puts results in the security
// view).
type sarifProperties struct {
	SecuritySeverity string   `json:"security-severity"`
	Tags             []string `json:"tags,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	BaselineState       string            `json:"baselineState,omitempty"`
	Properties          sarifProperties   `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical  `json:"physicalLocation"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifMessage  `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation struct {
		URI string `json:"uri"`
	} `json:"artifactLocation"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// sarifFingerprint is the partialFingerprints key of report.Fingerprint;
// it names the fingerprint's version, so a change of method is a new key.
const sarifFingerprint = "mcpsandbox/v2"

// securitySeverity is the score GitHub code scanning ranks a result by
// (0.1-3.9 low, 4.0-6.9 medium, 7.0-8.9 high, 9.0-10.0 critical):
// critical 9.5, error 7.5, warning 5.0, note 2.0.
func securitySeverity(sev report.Severity) string {
	score := map[report.Severity]float64{report.SeverityCritical: 9.5, report.SeverityError: 7.5, report.SeverityWarning: 5.0, report.SeverityNote: 2.0}[sev]
	return strconv.FormatFloat(score, 'f', 1, 64)
}

// sarifLevel maps a severity to a SARIF level, which has no "critical".
func sarifLevel(sev report.Severity) string {
	switch {
	case sev >= report.SeverityError:
		return "error"
	case sev == report.SeverityWarning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes findings as SARIF 2.1.0 results, one rule per
// mcpsandbox rule. Each result points at the workspace file its first
// piece of evidence names, or at a logical location for the tool.
func WriteSARIF(w io.Writer, r *report.Report, version string) error {
	drv := sarifDriver{Name: "mcpsandbox", Version: version, InformationURI: "https://github.com/mcpsandbox/mcpsandbox", Rules: []sarifRule{}}
	for _, rl := range rules.All() {
		sr := sarifRule{ID: rl.ID, ShortDescription: sarifMessage{Text: rl.ID}, FullDescription: sarifMessage{Text: rl.Rationale},
			Properties: sarifProperties{SecuritySeverity: securitySeverity(rl.Severity), Tags: []string{"security"}}}
		sr.DefaultConfiguration.Level = sarifLevel(rl.Severity)
		drv.Rules = append(drv.Rules, sr)
	}
	ex, er, nc := report.CoverageCounts(r.Coverage)
	run := sarifRun{Tool: sarifTool{Driver: drv}, Results: []sarifResult{}, Properties: sarifRunProperties{Coverage: sarifCoverage{
		Summary: coverageLine(r), Tools: len(r.Coverage), Exercised: ex, Errored: er, NotCalled: nc, ByTool: r.Coverage}}}
	if run.Properties.Coverage.ByTool == nil {
		run.Properties.Coverage.ByTool = []report.ToolCoverage{}
	}
	for _, f := range r.Findings {
		res := sarifResult{RuleID: f.Rule, Level: sarifLevel(f.Severity), Message: sarifMessage{Text: f.Message + evidenceText(f.Evidence)},
			PartialFingerprints: map[string]string{sarifFingerprint: fingerprint(f)}, Properties: sarifProperties{SecuritySeverity: securitySeverity(f.Severity)}}
		if f.Baselined {
			res.BaselineState = "unchanged"
		}
		loc := sarifLocation{LogicalLocations: []sarifLogical{{Name: f.Tool, FullyQualifiedName: "mcp/tools/" + f.Tool, Kind: "function"}}}
		loc.PhysicalLocation.ArtifactLocation.URI = artifactURI(f)
		res.Locations = []sarifLocation{loc}
		run.Results = append(run.Results, res)
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

// artifactURI is a workspace file the finding names, relative to the
// workspace (what a repository checkout has), else a stand-in for the tool.
// Each segment is escaped: a URI holds no "<" (the bait's placeholders,
// "<project>/README.md"), space or control character.
func artifactURI(f report.Finding) string {
	for _, e := range f.Evidence {
		if i := strings.Index(e, " /workspace/"); i >= 0 {
			segs := strings.Split(strings.TrimPrefix(e[i+1:], "/workspace/"), "/")
			for k := range segs {
				segs[k] = url.PathEscape(segs[k])
			}
			return strings.Join(segs, "/")
		}
	}
	return "mcp-tools/" + url.PathEscape(f.Tool)
}

func evidenceText(ev []string) string {
	if len(ev) == 0 {
		return ""
	}
	return "\nEvidence:\n- " + strings.Join(ev, "\n- ")
}
