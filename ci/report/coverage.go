package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CoverageStatus says how far a tool was exercised. The zero value has no
// name and does not marshal.
type CoverageStatus int

// Coverage statuses.
const (
	// CoverageExercised: at least one counted call returned a result that is not
	// an error.
	CoverageExercised CoverageStatus = iota + 1
	// CoverageErrored: counted calls were made and every one failed (isError,
	// a result that says it failed without it (Call.FailsBy), a JSON-RPC
	// error, a timeout, the server gone, a result refused).
	CoverageErrored
	// CoverageNotCalled: no counted call was made.
	CoverageNotCalled
)

// CoverageStatuses lists every status.
func CoverageStatuses() []CoverageStatus {
	return []CoverageStatus{CoverageExercised, CoverageErrored, CoverageNotCalled}
}

// String is the status's name in reports.
func (s CoverageStatus) String() string {
	switch s {
	case CoverageExercised:
		return "exercised"
	case CoverageErrored:
		return "errored"
	case CoverageNotCalled:
		return "not-called"
	}
	return fmt.Sprintf("CoverageStatus(%d)", int(s))
}

func (s CoverageStatus) valid() bool { return s >= CoverageExercised && s <= CoverageNotCalled }

// ParseCoverageStatus reads a status's name.
func ParseCoverageStatus(name string) (CoverageStatus, error) {
	for _, s := range CoverageStatuses() {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown coverage status %q (want %s)", name, names(CoverageStatuses()))
}

// MarshalText keeps the JSON a name.
func (s CoverageStatus) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, fmt.Errorf("marshalling %s: no such coverage status", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a name.
func (s *CoverageStatus) UnmarshalText(b []byte) error {
	v, err := ParseCoverageStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ToolCoverage is how far one listed tool was exercised. A finding, or
// the absence of one, says something about a tool only when it was
// exercised: an errored or uncalled tool did not run the code its hints
// describe.
type ToolCoverage struct {
	Tool   string         `json:"tool"`
	Status CoverageStatus `json:"status"`
	// Calls counts the calls that count (see Counts); Exercising, those
	// of them that returned a result that is not an error.
	Calls      int `json:"calls"`
	Exercising int `json:"exercising"`
	// Call is, for an errored tool, the first counted call, whose failure
	// Reason quotes.
	Call int `json:"call,omitempty"`
	// Reason says why the tool was not exercised: for an errored tool its
	// first counted call's error (one line, at most MaxCoverageReason
	// bytes, control characters escaped); for one not called, the
	// notCalled reason, or why no call was made.
	Reason string `json:"reason,omitempty"`
}

// MaxCoverageReason bounds ToolCoverage.Reason, in bytes (an ellipsis
// and the full size follow a cut).
const MaxCoverageReason = 240

// Counts says whether call c counts toward its tool's coverage: every
// call but the repeats (the same arguments again, for idempotentHint)
// the negatives (inputs that break the schema, made to fail) and the
// boundary probes (paths and URLs out of bounds, made to be refused). A probe
// step that expects an error counts: if it fails, its tool was not
// exercised by it.
func Counts(c Call) bool {
	return c.Source != "repeat" && c.Source != "negative" && c.Source != "boundary"
}

// Succeeded says whether call c returned a result that is not an error:
// no isError, and nothing in it that says it failed (FailsBy). A result
// the client refused over a bound (errorKind client) was not read, so it
// is not one.
func Succeeded(c Call) bool {
	return c.ErrorKind == "" && c.Error == "" && !c.IsError && c.FailsBy == ""
}

// Coverage computes each listed tool's coverage, in the order of r.Tools,
// from its calls and the notCalled list. It reads only observations, so
// it can be computed again from a report read back.
func Coverage(r *Report) []ToolCoverage {
	byTool := map[string]*ToolCoverage{}
	for _, t := range r.Tools {
		byTool[t.Name] = &ToolCoverage{Tool: t.Name}
	}
	for _, c := range r.Calls {
		tc := byTool[c.Tool]
		if tc == nil || !Counts(c) {
			continue
		}
		tc.Calls++
		switch {
		case Succeeded(c):
			tc.Exercising++
		case tc.Call == 0:
			tc.Call, tc.Reason = c.Seq, ShortReason(failure(c))
		}
	}
	notCalled := map[string]string{}
	for _, n := range r.NotCalled {
		if _, seen := notCalled[n.Tool]; !seen {
			notCalled[n.Tool] = n.Reason
		}
	}
	out := make([]ToolCoverage, 0, len(r.Tools))
	for _, t := range r.Tools {
		tc := *byTool[t.Name]
		switch {
		case tc.Exercising > 0:
			tc.Status, tc.Call, tc.Reason = CoverageExercised, 0, ""
		case tc.Calls > 0:
			tc.Status = CoverageErrored
		default:
			reason, ok := notCalled[tc.Tool]
			switch {
			case ok:
			case !r.Complete:
				reason = "the scan ended before it was called"
			default:
				reason = "no call was made"
			}
			tc.Status, tc.Reason = CoverageNotCalled, ShortReason(reason)
		}
		out = append(out, tc)
	}
	return out
}

// failure says how call c failed, in words.
func failure(c Call) string {
	switch {
	case c.ErrorKind != "" || c.Error != "":
		kind := c.ErrorKind
		if kind == "" {
			kind = "error"
		}
		return kind + ": " + c.Error
	case c.FailsBy != "":
		return "the result says it failed (" + c.FailsBy + "): " + c.Result
	case c.Result == "":
		return "isError, with no text"
	}
	return "isError: " + c.Result
}

// ShortReason is s on one line, its control characters escaped, cut at
// MaxCoverageReason bytes on a character boundary.
func ShortReason(s string) string {
	s = Printable(OneLine(s))
	if len(s) <= MaxCoverageReason {
		return s
	}
	cut := MaxCoverageReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + fmt.Sprintf("… (%d bytes)", len(s))
}

// CoverageCounts are the tools exercised, errored and not called.
func CoverageCounts(cov []ToolCoverage) (exercised, errored, notCalled int) {
	for _, c := range cov {
		switch c.Status {
		case CoverageExercised:
			exercised++
		case CoverageErrored:
			errored++
		default:
			notCalled++
		}
	}
	return exercised, errored, notCalled
}
