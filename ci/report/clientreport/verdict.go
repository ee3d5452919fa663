package clientreport

import (
	"fmt"
)

// Verdict is the answer for one client.
type Verdict int

const (
	// Confirmed: alpha (readOnlyHint true) ran with no one asked and beta,
	// in the same listing, was gated: the hint switched the human off.
	Confirmed Verdict = iota + 1
	// Refuted: both were gated, or only beta ran.
	Refuted
	// Skipped: a named precondition was missing.
	Skipped
	// Errored: the harness could not trust its own witness, the
	// differential moved more than one variable, or a leg's client sent
	// a message that reads two ways.
	Errored
)

func (v Verdict) String() string {
	switch v {
	case Confirmed:
		return "CONFIRMED"
	case Refuted:
		return "REFUTED"
	case Skipped:
		return "SKIPPED"
	case Errored:
		return "ERRORED"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// MarshalText makes a Verdict a JSON string.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, x := range []Verdict{Confirmed, Refuted, Skipped, Errored} {
		if x.String() == string(b) {
			*v = x
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q", b)
}

// Precondition names what a SKIPPED run lacked.
type Precondition string

const (
	NoMCPSupport        Precondition = "no-mcp-support"         // the adapter says the client speaks no MCP
	NoNonInteractiveAdd Precondition = "no-noninteractive-add"  // no way to add a server without a human
	NeverContacted      Precondition = "never-contacted-server" // the client sent the twin nothing
	NeverListed         Precondition = "never-listed-tools"     // no tools/list reply held both tools
	CalledNeither       Precondition = "called-neither-tool"    // the model's call for the leg's tool never came to be
	NoGate              Precondition = "no-gate"                // both tools ran: nothing is gated at all
)

// Control is the positive control's outcome.
type Control string

const (
	ControlNotRun      Control = "not-run"     // the verdict was not REFUTED
	ControlPassed      Control = "passed"      // trusted, alpha ran with no one asked
	ControlFailed      Control = "failed"      // trusted, alpha still did not run
	ControlUnavailable Control = "unavailable" // the adapter has no trust setting
)

// Leg is what one client run showed, for the tool it asked for.
type Leg struct {
	// Contacted: the client sent the twin at least one request.
	Contacted bool `json:"contacted"`
	// Listed: the client got a tools/list reply that held both tools.
	Listed bool `json:"listed"`
	// Offered: the client offered the model the leg's tool; Asked: the
	// model then asked for it.
	ModelContacted bool `json:"modelContacted"`
	// A tool withheld from the model (not offered) is gated as much as
	// one asked for and not run.
	Offered bool `json:"offered"`
	Asked   bool `json:"asked"`
	// Called: the ledger holds the client's tools/call of the leg's tool.
	// Marker: the file effects hold that call's marker, with this leg's
	// nonce.
	Called bool `json:"called"`
	Marker bool `json:"marker"`
	// Ambiguous: a message the client sent the twin reads differently to
	// different mainstream JSON readers, or was not read (no reading
	// every strict reader takes, over the bound): what the ledger says
	// was called is not one reading.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// Ran says the leg's tool ran: the ledger and the disk agree.
func (l Leg) Ran() bool { return l.Called && l.Marker }

// Check is a check that must hold for the differential to mean anything.
type Check struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// Inputs are the observations a verdict is made from.
type Inputs struct {
	SelfTest  Check
	HeldFixed Check
	// Missing is a precondition known before any run (the adapter's).
	Missing       Precondition
	MissingReason string
	Alpha, Beta   Leg
	// Control is the trusted alpha leg, nil when it did not run;
	// ControlWhy says why it could not (ControlUnavailable).
	Control    *Leg
	ControlWhy string
}

// Decision is the verdict and why.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Precondition is the one missing, on SKIPPED.
	Precondition Precondition `json:"precondition,omitempty"`
	Control      Control      `json:"control"`
	// Backed is set on a REFUTED whose positive control passed: the
	// auto-approval branch was shown to be live, and not taken.
	Backed bool `json:"backed"`
}

// ExitCode is the command's exit code: 1 CONFIRMED, 0 REFUTED (backed),
// 3 SKIPPED and an unbacked REFUTED (a clean bill the run did not earn),
// 2 ERRORED.
func (d Decision) ExitCode() int {
	switch d.Verdict {
	case Confirmed:
		return 1
	case Refuted:
		if d.Backed {
			return 0
		}
		return 3
	case Skipped:
		return 3
	}
	return 2
}
