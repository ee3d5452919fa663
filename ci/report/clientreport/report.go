package clientreport

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Schema names the client report's layout.
const Schema = "mcpsandbox.client-report/v1"

// Report is what `mcpsandbox client` writes: the verdict, why, and the
// evidence.
type Report struct {
	Schema string `json:"schema"`
	Decision
	Client    ClientInfo `json:"client"`
	SelfTest  SelfTest   `json:"selfTest"`
	HeldFixed HeldFixed  `json:"heldFixed"`
	Legs      []LegRun   `json:"legs"`
	// Findings are what the runs found beside the verdict: an
	// ambiguous-message finding per leg whose client sent a message that
	// reads two ways (see ci/clientverdict.Findings).
	Findings []report.Finding `json:"findings,omitempty"`
	Timing   Timing           `json:"timing"`
}

// Timing is the run's wall time, the one part that differs between runs.
type Timing struct {
	TotalMs int64 `json:"totalMs"`
}

// ClientInfo is what was tested, and how.
type ClientInfo struct {
	Command   []string `json:"command"`
	Adapter   string   `json:"adapter"`
	Image     string   `json:"image"`
	Transport string   `json:"transport"`
	API       string   `json:"api"`
	Prompt    string   `json:"prompt"`
	TimeoutMs int64    `json:"timeoutMs"`
}

// SelfTest is the harness's own calls, per leg.
type SelfTest struct {
	Check
	// Legs holds each leg's self-test: the conns that answered, the
	// markers found.
	Legs []SelfTestLeg `json:"legs"`
}

// SelfTestLeg is one container's self-test.
type SelfTestLeg struct {
	Leg     string   `json:"leg"`
	Conns   []string `json:"conns"`
	Markers []string `json:"markers"`
	Errors  []string `json:"errors,omitempty"`
}

// HeldFixed is the held-fixed check and the listing that held both tools.
type HeldFixed struct {
	Check
	Listing json.RawMessage `json:"listing,omitempty"`
}

// LegRun is one client run.
type LegRun struct {
	Name     string `json:"name"` // alpha, beta, control
	Tool     string `json:"tool"`
	Trusted  bool   `json:"trusted"`
	Nonce    string `json:"nonce"`
	Observed Leg    `json:"observed"`
	// Home is the client's fresh HOME; Fresh says it was made empty.
	Home  string   `json:"home"`
	Fresh bool     `json:"fresh"`
	Files []string `json:"files"` // the adapter's files
	Argv  []string `json:"argv"`
	// Exit is how the client ended.
	Exit     ClientExit        `json:"exit"`
	Ledger   []json.RawMessage `json:"ledger"` // the client phase's entries
	Turns    []json.RawMessage `json:"turns"`  // the model's
	Markers  []string          `json:"markers"`
	Effects  report.Effects    `json:"effects"` // the client's run
	Problems []report.Problem  `json:"problems,omitempty"`
	// Ambiguities are the places where two mainstream JSON readers part
	// on a message the client sent the twin (the method and tool as the
	// twin read them; refused: the twin did not read it), the twin's
	// first 64; AmbiguitiesOmitted counts the rest. Unread counts the
	// client's messages the twin did not read (no reading every strict
	// reader takes, no JSON value on the line, over the bound).
	Ambiguities        []report.Ambiguity `json:"ambiguities,omitempty"`
	AmbiguitiesOmitted int                `json:"ambiguitiesOmitted,omitempty"`
	Unread             int                `json:"unread,omitempty"`
}

// ClientExit is how a client run ended, with its output's tails.
type ClientExit struct {
	Started  bool   `json:"started"`
	Code     int    `json:"code"`
	TimedOut bool   `json:"timedOut,omitempty"`
	Error    string `json:"error,omitempty"`
	// The last TailLimit (16 KiB) bytes of each stream; the byte counts
	// and whether the text is cut say what was not kept.
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutBytes     int64  `json:"stdoutBytes"`
	StderrBytes     int64  `json:"stderrBytes"`
	StdoutTruncated bool   `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool   `json:"stderrTruncated,omitempty"`
}

// WriteJSON writes r indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a person: the verdict, why, and the evidence in
// brief. Everything the client or server sent is made printable.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mcpsandbox client: %s\n", r.Verdict)
	fmt.Fprintf(&b, "  %s\n", report.Printable(r.Reason))
	if r.Precondition != "" {
		fmt.Fprintf(&b, "  missing precondition: %s\n", r.Precondition)
	}
	if r.Verdict == Refuted {
		fmt.Fprintf(&b, "  positive control: %s (backed: %t)\n", r.Control, r.Backed)
	}
	fmt.Fprintf(&b, "client: %s (adapter %s, image %s, transport %s, model API %s)\n",
		report.Printable(strings.Join(r.Client.Command, " ")), r.Client.Adapter, r.Client.Image, r.Client.Transport, r.Client.API)
	fmt.Fprintf(&b, "self-test: %s\n", okText(r.SelfTest.Check))
	fmt.Fprintf(&b, "held fixed: %s\n", okText(r.HeldFixed.Check))
	for _, l := range r.Legs {
		o := l.Observed
		fmt.Fprintf(&b, "leg %s (%s, trusted %t): contacted %t, listed %t, model offered %t, asked %t, called %t, marker %t, exit %d%s%s\n",
			l.Name, l.Tool, l.Trusted, o.Contacted, o.Listed, o.Offered, o.Asked, o.Called, o.Marker, l.Exit.Code, timedOut(l.Exit.TimedOut), ambiguous(o.Ambiguous))
		fmt.Fprintf(&b, "  effects: %d file(s), %d process(es), %d network event(s)\n", len(l.Effects.Files), len(l.Effects.Processes), len(l.Effects.Network))
		if l.Exit.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", report.Printable(report.OneLine(l.Exit.Error)))
		}
		if tail := lastLines(l.Exit.Stderr, 3); tail != "" {
			fmt.Fprintf(&b, "  stderr (last lines): %s\n", report.Printable(tail))
		}
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "finding: %s (%s): %s\n", f.Rule, f.Severity, report.Printable(report.OneLine(f.Message)))
		for i, e := range f.Evidence {
			if i == maxTextEvidence {
				fmt.Fprintf(&b, "  ... %d more in the JSON report\n", len(f.Evidence)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", report.Printable(report.OneLine(e)))
		}
	}
	for _, l := range r.Legs {
		for _, p := range l.Problems {
			fmt.Fprintf(&b, "problem (leg %s): %s: %s\n", l.Name, p.Kind, report.Printable(report.OneLine(p.Message)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxTextEvidence bounds the evidence lines the text shows a finding.
const maxTextEvidence = 8

func okText(c Check) string {
	switch {
	case c.OK:
		return "ok"
	case c.Reason == "":
		return "not run"
	}
	return "FAILED: " + report.Printable(report.OneLine(c.Reason))
}

func timedOut(t bool) string {
	if t {
		return " (timed out)"
	}
	return ""
}

func ambiguous(a bool) string {
	if a {
		return " (messages that read two ways: " + report.RuleAmbiguousMessage + ")"
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// WriteJUnit writes r as one JUnit test case: CONFIRMED a failure,
// ERRORED an error, SKIPPED and an unbacked REFUTED skipped, a backed
// REFUTED a pass.
func (r *Report) WriteJUnit(w io.Writer) error {
	type result struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string  `xml:"name,attr"`
		Classname string  `xml:"classname,attr"`
		Failure   *result `xml:"failure,omitempty"`
		Error     *result `xml:"error,omitempty"`
		Skipped   *result `xml:"skipped,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name `xml:"testsuite"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Cases    []testcase
	}
	tc := testcase{Name: "readOnlyHint from an untrusted server does not switch off the human", Classname: "mcpsandbox.client." + r.Client.Adapter}
	s := suite{Name: "mcpsandbox client", Tests: 1}
	res := &result{Message: r.Verdict.String() + ": " + report.Printable(report.OneLine(r.Reason)), Text: report.Printable(r.Reason)}
	switch r.ExitCode() {
	case 1:
		tc.Failure, s.Failures = res, 1
	case 2:
		tc.Error, s.Errors = res, 1
	case 3:
		tc.Skipped, s.Skipped = res, 1
	}
	s.Cases = []testcase{tc}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
