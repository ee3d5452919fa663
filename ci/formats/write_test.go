package formats

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/joshdk/go-junit"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

func TestSARIFValidatesAgainstTheOfficialSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, reporttest.Sample(), "test"); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.ValidateWith("testdata/sarif-schema-2.1.0.json", buf.Bytes()); err != nil {
		t.Fatalf("SARIF does not validate: %v\n%s", err, buf.String())
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	json.Unmarshal(buf.Bytes(), &log)
	res := log.Runs[0].Results
	if len(res) != 2 || res[0].RuleID != "readonly-writes" || res[0].Level != "error" ||
		res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI != "tests/probe.spec.ts" {
		t.Errorf("results = %+v", res)
	}
	// A broken document does not validate: the check can fail.
	if err := reporttest.ValidateWith("testdata/sarif-schema-2.1.0.json", []byte(`{"version":"2.1.0","runs":[{"results":[]}]}`)); err == nil {
		t.Error("a run without a tool validates")
	}
}

// TestSARIFURIsAreEscaped: a finding on a file of the bait, which the
// report names by placeholder, or on a name with a space, points at a
// valid URI reference.
func TestSARIFURIsAreEscaped(t *testing.T) {
	for ev, want := range map[string]string{
		"modified /workspace/<project>/README.md": "%3Cproject%3E/README.md",
		"created /workspace/my notes/a.txt":       "my%20notes/a.txt",
		"created /workspace/src/x.js":             "src/x.js",
	} {
		if got := artifactURI(report.Finding{Tool: "t", Evidence: []string{ev}}); got != want {
			t.Errorf("%q: uri %q, want %q", ev, got, want)
		}
	}
}

func TestJUnitParsesWithAJUnitReader(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, reporttest.Sample()); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("go-junit: %v\n%s", err, buf.String())
	}
	if len(suites) != 1 {
		t.Fatalf("%d suites", len(suites))
	}
	st := map[string]junit.Status{}
	for _, tc := range suites[0].Tests {
		st[tc.Name] = tc.Status
	}
	if st["lying_read"] != junit.StatusFailed || st["echo"] != junit.StatusPassed || st["needs_args"] != junit.StatusSkipped {
		t.Errorf("statuses = %v", st)
	}
	if suites[0].Totals.Failed != 1 || suites[0].Totals.Tests != 3 {
		t.Errorf("totals = %+v", suites[0].Totals)
	}
	// go-junit reads a testcase's attributes as its properties, not a
	// <properties> block: TestOneFingerprintEverywhere reads those.
	if !bytes.Contains(buf.Bytes(), []byte(`<property name="fingerprint" value="`)) {
		t.Errorf("no fingerprint property:\n%s", buf.String())
	}

	// A server-level finding is a failure of a testcase named for the
	// server.
	r := reporttest.Sample()
	r.Findings = append(r.Findings, report.Finding{Rule: "events-dropped", Severity: report.SeverityError, Message: "dropped", Evidence: []string{"3 events dropped"}})
	buf.Reset()
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	suites, err = junit.Ingest(buf.Bytes())
	if err != nil || suites[0].Totals.Failed != 2 || suites[0].Tests[3].Name != "fixture 1.0.0" || suites[0].Tests[3].Classname != "mcp.server" {
		t.Errorf("server-level finding: %v %+v", err, suites)
	}
}

func TestMarkdownSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, reporttest.Sample()); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"## mcpsandbox: fixture 1.0.0 — 2 finding(s), exercised 2 of 3 tools", "| `lying_read` | true | · | · | false | 1 | exercised | 1 | 0 | 1 | 2 ❌ |",
		"**Coverage:** exercised 2 of 3 tools (66%): 0 errored, 1 not called.", "no evidence of anything",
		"#### **error** `readonly-writes`", "- `lying_read` (call 1): \"lying_read\" declares readOnlyHint: true, but call 1 changed 1 file(s)\n",
		"### Not exercised\n\n- `needs_args`: not called: no probe"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "xml", reporttest.Sample(), ""); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestOneFingerprintEverywhere: for the same finding, SARIF's
// partialFingerprints, JUnit's fingerprint property and the baseline entry
// carry report.Fingerprint.
func TestOneFingerprintEverywhere(t *testing.T) {
	r := reporttest.Sample()
	want := map[string]string{} // rule -> fingerprint
	for _, f := range r.Findings {
		want[f.Rule] = report.Fingerprint(f)
		if f.Fingerprint != want[f.Rule] {
			t.Fatalf("sample %s: fingerprint %q", f.Rule, f.Fingerprint)
		}
	}

	var sb bytes.Buffer
	if err := WriteSARIF(&sb, r, "test"); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID         string `json:"id"`
						Properties struct {
							SecuritySeverity string   `json:"security-severity"`
							Tags             []string `json:"tags"`
						} `json:"properties"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID              string            `json:"ruleId"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				Properties          map[string]string `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sb.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	for _, res := range log.Runs[0].Results {
		if got := res.PartialFingerprints; len(got) != 1 || got["mcpsandbox/v2"] != want[res.RuleID] {
			t.Errorf("SARIF %s: partialFingerprints %v, want mcpsandbox/v2 %s", res.RuleID, got, want[res.RuleID])
		}
		if res.Properties["security-severity"] != "7.5" {
			t.Errorf("SARIF %s (error): security-severity %q, want 7.5", res.RuleID, res.Properties["security-severity"])
		}
	}
	scores := map[string]string{}
	for _, rl := range log.Runs[0].Tool.Driver.Rules {
		scores[rl.ID] = rl.Properties.SecuritySeverity
		if !reflect.DeepEqual(rl.Properties.Tags, []string{"security"}) {
			t.Errorf("rule %s: tags %q", rl.ID, rl.Properties.Tags)
		}
	}
	if scores["secret-exfiltration"] != "9.5" || scores["readonly-writes"] != "7.5" || scores["readonly-background"] != "5.0" || len(scores) != len(rules.All()) {
		t.Errorf("rule security-severity %v", scores)
	}

	var jb bytes.Buffer
	if err := WriteJUnit(&jb, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name       string `xml:"name,attr"`
				Properties []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(jb.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tc := range doc.Suites[0].Cases {
		for _, p := range tc.Properties {
			got = append(got, tc.Name+" "+p.Name+"="+p.Value)
		}
	}
	sort.Strings(got)
	wantJUnit := []string{"lying_read fingerprint=" + want["closed-world-network"], "lying_read fingerprint=" + want["readonly-writes"]}
	sort.Strings(wantJUnit)
	if !reflect.DeepEqual(got, wantJUnit) {
		t.Errorf("JUnit properties %q\nwant %q", got, wantJUnit)
	}

	entries := map[string]string{}
	for _, e := range baseline.FromReport(r).Findings {
		entries[e.Rule] = e.Fingerprint
	}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("baseline fingerprints %v, want %v", entries, want)
	}
}

// TestMarkdownNamesRounds: with --rounds N, a finding not every round saw
// says which did, and a problem its round.
func TestMarkdownNamesRounds(t *testing.T) {
	r := report.New()
	r.Rounds = &report.Rounds{Run: 2}
	r.Findings = []report.Finding{{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "b", Call: 2, Message: "m", Evidence: []string{"created /tmp/b"}, Rounds: []int{2}}}
	r.Problems = []report.Problem{{Kind: "timeout", Call: 2, Message: "late", Round: 2}}
	r.Finish()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`b` (call 2) (round 2 of 2): m", "- timeout (call 2) (round 2): late"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}
