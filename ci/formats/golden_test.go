package formats

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// hostile is a tool name and text that would act on a terminal: clear
// the screen, return the carriage, ring the bell, and a C1 CSI.
const hostile = "evil\x1b[2J\r\a\u009b31m"

// richSample is reporttest.Sample with what the formats must show: a
// tool whose every call failed, one not called, a tool named with
// control characters, two tools with the same evidence for one rule, a
// server-level finding and a stderr that tries to clear the screen.
func richSample() *report.Report {
	r := reporttest.Sample()
	r.Tools = append(r.Tools,
		report.Tool{Name: "flaky", Description: "fails", Annotations: json.RawMessage(`null`), InputSchema: json.RawMessage(`{"type":"object"}`)},
		report.Tool{Name: "twin_read", Description: "claims read-only", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Hints: report.Hints{ReadOnly: new(true)}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		report.Tool{Name: hostile, Description: "desc " + hostile, Annotations: json.RawMessage(`null`), InputSchema: json.RawMessage(`{"type":"object"}`)},
	)
	twin := report.NewEffects()
	twin.Files = []report.FileChange{{Path: "/workspace/tests/probe.spec.ts", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}}
	r.Calls = append(r.Calls,
		report.Call{Seq: 3, Tool: "flaky", Arguments: json.RawMessage(`{}`), Source: "empty", IsError: true, Result: "boom:\n" + hostile, Effects: report.NewEffects()},
		report.Call{Seq: 4, Tool: "flaky", Arguments: json.RawMessage(`{}`), Source: "negative", Negative: "required x", IsError: true, Effects: report.NewEffects()},
		report.Call{Seq: 5, Tool: "twin_read", Arguments: json.RawMessage(`{}`), Source: "synth", Result: "ok", Effects: twin},
		report.Call{Seq: 6, Tool: hostile, Arguments: json.RawMessage(`{}`), Source: "empty", Error: "timed out after 30s", ErrorKind: "timeout", Effects: report.NewEffects()},
	)
	r.Findings = append(r.Findings,
		report.Finding{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "twin_read", Call: 5, Hint: "readOnlyHint: true",
			Message:  `"twin_read" declares readOnlyHint: true, but call 5 changed 1 file(s); the specification: readOnlyHint: "If true, the tool does not modify its environment."`,
			Evidence: []string{"created /workspace/tests/probe.spec.ts"}},
		report.Finding{Rule: "events-dropped", Severity: report.SeverityError,
			Message:  "the agent dropped 3 events; The agent dropped events over its bound (a flood): what the server did afterwards is not fully recorded, so no verdict can clear it.",
			Evidence: []string{"3 events dropped"}},
	)
	r.Findings[0].Message += `; the specification: readOnlyHint: "If true, the tool does not modify its environment."`
	r.Findings[1].Message += `; the specification: openWorldHint: "If true, this tool may interact with an 'open world' of external entities. If false, the tool's domain of interaction is closed."`
	for i := range r.Findings {
		r.Findings[i].Fingerprint = report.Fingerprint(r.Findings[i])
	}
	report.SortFindings(r.Findings)
	r.Problems = []report.Problem{{Kind: "timeout", Call: 6, Message: "the call timed out: " + hostile}}
	r.Complete = false
	r.Server.StderrHead = "starting\nError: cannot open " + hostile + "\n"
	r.Server.StderrTail = "last words " + hostile + "\n"
	r.Finish()
	return r
}

// controls matches what must never reach a terminal from the text and
// Markdown formats: every C0 control but the newline, DEL, the C1 block.
var controls = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f]")

func TestTextAndMarkdownGolden(t *testing.T) {
	for _, tc := range []struct{ format, file string }{{"text", "rich.txt"}, {"markdown", "rich.md"}} {
		var buf bytes.Buffer
		if err := Write(&buf, tc.format, richSample(), "test"); err != nil {
			t.Fatal(err)
		}
		if loc := controls.FindIndex(buf.Bytes()); loc != nil {
			t.Errorf("%s: a control character at byte %d: %q", tc.format, loc[0], buf.Bytes()[max(0, loc[0]-20):loc[1]])
		}
		golden(t, filepath.Join("testdata", tc.file), buf.Bytes())
	}
}

// TestTextSaysWhatCoverageMeans: the coverage line, the legend, each tool
// not exercised with why, the plain words on what that means, the
// specification once per rule and the shared evidence once.
func TestTextSaysWhatCoverageMeans(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, richSample()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"coverage exercised 3 of 6 tools (50%): 2 errored, 1 not called",
		"· when not declared",
		"flaky                         errored (call 3): isError: boom: evil\\x1b[2J \\x07\\u009b31m", // one line: \r folded
		"needs_args                    not called: no probe",
		"absence of a finding about them is no evidence of anything",
		"2 findings with the same evidence: lying_read (call 1), twin_read (call 5)",
		"evil\\x1b[2J\\x0d\\x07\\u009b31m  ·",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `readOnlyHint: "If true, the tool does not modify its environment."`); n != 1 {
		t.Errorf("the specification of readOnlyHint quoted %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "created /workspace/tests/probe.spec.ts"); n != 1 {
		t.Errorf("the shared evidence printed %d times, want once:\n%s", n, out)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./ci/formats -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./ci/formats -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestSARIFAndJUnitCarryCoverage: SARIF's run properties and JUnit's
// suite properties give the coverage; a tool not exercised and without
// findings is a skipped test case that says why.
func TestSARIFAndJUnitCarryCoverage(t *testing.T) {
	r := richSample()
	var sb bytes.Buffer
	if err := WriteSARIF(&sb, r, "test"); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.ValidateWith("testdata/sarif-schema-2.1.0.json", sb.Bytes()); err != nil {
		t.Fatalf("SARIF does not validate: %v", err)
	}
	var log struct {
		Runs []struct {
			Properties struct {
				Coverage struct {
					Summary                              string
					Tools, Exercised, Errored, NotCalled int
					ByTool                               []report.ToolCoverage
				} `json:"mcpsandbox/coverage"`
			} `json:"properties"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sb.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	c := log.Runs[0].Properties.Coverage
	if c.Summary != "exercised 3 of 6 tools (50%): 2 errored, 1 not called" || c.Tools != 6 || c.Exercised != 3 || c.Errored != 2 || c.NotCalled != 1 || len(c.ByTool) != 6 {
		t.Errorf("SARIF coverage %+v", c)
	}

	var jb bytes.Buffer
	if err := WriteJUnit(&jb, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<property name="coverage" value="exercised 3 of 6 tools (50%): 2 errored, 1 not called"></property>`,
		`<testcase name="flaky" classname="mcp.tools">`,
		`<skipped message="errored (call 3): isError: boom: evil\x1b[2J \x07\u009b31m"></skipped>`,
	} {
		if !strings.Contains(jb.String(), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, jb.String())
		}
	}
}
