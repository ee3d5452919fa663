package formats

import (
	"encoding/xml"
	"io"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// JUnit XML: a testsuite for the server (its coverage a property), a
// testcase per tool, a failure per finding, skipped for tools not
// exercised (errored or not called) that have no finding. A failing testcase lists its
// findings' fingerprints as properties named fingerprint.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Fails      int              `xml:"failures,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Properties *junitProperties `xml:"properties"`
	Failures   []junitFailure   `xml:"failure"`
	Skipped    *junitSkipped    `xml:"skipped"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitFingerprint names the property that carries a finding's
// fingerprint; junitCoverage, the suite's that says how many tools were
// exercised.
const (
	junitFingerprint = "fingerprint"
	junitCoverage    = "coverage"
)

// fail records a finding as a failure of tc, with its fingerprint.
func (tc *junitCase) fail(f report.Finding) {
	tc.Failures = append(tc.Failures, junitFailure{Message: f.Message, Type: f.Rule + " (" + f.Severity.String() + ")",
		Text: strings.Join(f.Evidence, "\n")})
	if tc.Properties == nil {
		tc.Properties = &junitProperties{}
	}
	tc.Properties.Property = append(tc.Properties.Property, junitProperty{Name: junitFingerprint, Value: fingerprint(f)})
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *report.Report) error {
	suite := junitSuite{Name: "mcpsandbox: " + serverName(r),
		Properties: &junitProperties{Property: []junitProperty{{Name: junitCoverage, Value: coverageLine(r)}}}}
	cov := coverageOf(r)
	for _, t := range r.Tools {
		tc := junitCase{Name: t.Name, Classname: "mcp.tools"}
		for _, f := range r.Findings {
			if f.Tool != t.Name || f.Baselined {
				continue
			}
			tc.fail(f)
		}
		// A tool not exercised passed nothing: skipped, with why.
		if c, ok := cov[t.Name]; ok && c.Status != report.CoverageExercised && len(tc.Failures) == 0 {
			tc.Skipped = &junitSkipped{Message: whyNot(c)}
			suite.Skipped++
		}
		if len(tc.Failures) > 0 {
			suite.Fails++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	// Findings on tools the server no longer lists (contract drift, stale
	// baseline entries) and on the server itself.
	listed := map[string]bool{}
	for _, t := range r.Tools {
		listed[t.Name] = true
	}
	for _, f := range r.Findings {
		if !listed[f.Tool] && !f.Baselined {
			tc := junitCase{Name: f.Tool, Classname: "mcp.contract"}
			if f.Tool == "" {
				tc = junitCase{Name: serverName(r), Classname: "mcp.server"}
			}
			tc.fail(f)
			suite.Cases = append(suite.Cases, tc)
			suite.Tests++
			suite.Fails++
		}
	}
	all := junitSuites{Name: "mcpsandbox", Tests: suite.Tests, Fails: suite.Fails, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
