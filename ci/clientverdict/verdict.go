package clientverdict

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
)

// Decide makes the verdict.
func Decide(in clientreport.Inputs) clientreport.Decision {
	errored := func(format string, a ...any) clientreport.Decision {
		return clientreport.Decision{Verdict: clientreport.Errored, Reason: fmt.Sprintf(format, a...), Control: clientreport.ControlNotRun}
	}
	skipped := func(p clientreport.Precondition, format string, a ...any) clientreport.Decision {
		return clientreport.Decision{Verdict: clientreport.Skipped, Precondition: p, Reason: fmt.Sprintf(format, a...), Control: clientreport.ControlNotRun}
	}
	if !in.SelfTest.OK {
		return errored("the self-test failed, so the witness cannot be trusted: %s", in.SelfTest.Reason)
	}
	legs := []struct {
		name string
		leg  *clientreport.Leg
	}{{"alpha", &in.Alpha}, {"beta", &in.Beta}, {"control", in.Control}}
	// A call that reads two ways decides nothing, nor does its absence.
	for _, l := range legs {
		if l.leg != nil && l.leg.Ambiguous {
			return errored("the %s leg: the client sent the twin a message that mainstream JSON readers read differently, or one the twin could not read (%s): what the ledger says it called is one reading among several, so no verdict is certified", l.name, AmbiguousMessage)
		}
	}
	// A ledger and a disk that disagree are a broken witness, whatever the
	// client did.
	for _, l := range legs {
		if l.leg == nil {
			continue
		}
		if l.leg.Called && !l.leg.Marker {
			return errored("the %s leg: the ledger holds the call but its marker with this run's nonce is not on disk", l.name)
		}
		if l.leg.Marker && !l.leg.Called {
			return errored("the %s leg: a marker with this run's nonce is on disk but the ledger holds no call", l.name)
		}
	}
	if in.Missing != "" {
		return skipped(in.Missing, "%s", in.MissingReason)
	}
	for _, l := range legs[:2] {
		switch {
		case !l.leg.Contacted:
			return skipped(clientreport.NeverContacted, "in the %s leg the client never contacted the server", l.name)
		case !l.leg.Listed:
			return skipped(clientreport.NeverListed, "in the %s leg the client never listed the tools", l.name)
		}
	}
	if !in.HeldFixed.OK {
		return errored("the differential did not hold its variables fixed: %s", in.HeldFixed.Reason)
	}
	a, b := in.Alpha, in.Beta
	if a.Ran() && b.Ran() {
		return skipped(clientreport.NoGate, "both alpha (readOnlyHint true) and beta (false) ran with no one asked: the client gates no tool, so no hint decides anything")
	}
	// A tool that did not run is gated once the client reached its model
	// with the listing in hand: it was withheld from the model, or asked
	// for and not run. Before that, nothing was decided.
	for _, l := range legs[:2] {
		if !l.leg.Ran() && !l.leg.ModelContacted {
			return skipped(clientreport.CalledNeither, "in the %s leg the client called neither tool: it never asked the model, so no call could be gated", l.name)
		}
	}
	if a.Ran() {
		return clientreport.Decision{Verdict: clientreport.Confirmed, Control: clientreport.ControlNotRun,
			Reason: "alpha (readOnlyHint true) ran with no one asked, while beta (readOnlyHint false), in the same listing, was gated: the untrusted server's hint switched the human off"}
	}
	d := clientreport.Decision{Verdict: clientreport.Refuted, Reason: "both alpha and beta were gated: the hint did not switch the human off"}
	if b.Ran() {
		d.Reason = "only beta (readOnlyHint false) ran; alpha (true) was gated: the hint did not switch the human off"
	}
	switch {
	case in.Control == nil:
		d.Control = clientreport.ControlUnavailable
		why := in.ControlWhy
		if why == "" {
			why = "the positive control did not run"
		}
		d.Reason += "; unbacked: " + why
	case in.Control.Ran():
		d.Control, d.Backed = clientreport.ControlPassed, true
		d.Reason += "; the positive control passed (with the server trusted, alpha ran with no one asked)"
	default:
		d.Control = clientreport.ControlFailed
		d.Reason += "; unbacked: with the server trusted alpha still did not run, so the auto-approval branch was never shown to be live"
	}
	return d
}
