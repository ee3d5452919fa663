package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// Status is how a package's scan ended.
type Status int

const (
	// StatusOK: scanned, no finding at or above the status threshold.
	StatusOK Status = iota + 1
	// StatusFindings: scanned, with findings at or above the threshold.
	StatusFindings
	// StatusFailedFetch: the package could not be resolved or downloaded,
	// or was refused (a git or URL dependency).
	StatusFailedFetch
	// StatusFailedInstall: downloaded, but not installed, or no entry
	// point found.
	StatusFailedInstall
	// StatusFailedStart: the server did not start or answer initialize,
	// or the scan could not run.
	StatusFailedStart
	// StatusNeedsConfig: a required value the input gives no value or
	// default for (Why names them).
	StatusNeedsConfig
	// StatusTimeout: the per-package bound was hit.
	StatusTimeout
	// StatusNotScannedHere: a kind of server this command does not scan
	// (remote, PyPI, MCPB); Why says which.
	StatusNotScannedHere
	// StatusFailed: the scan's or the install's sandbox was lost (its
	// container removed, killed, restarted or paused from outside): what
	// was seen is kept in the report, but it is no result.
	StatusFailed
)

var statusNames = map[Status]string{
	StatusOK: "ok", StatusFindings: "findings", StatusFailedFetch: "failed-fetch", StatusFailedInstall: "failed-install",
	StatusFailedStart: "failed-start", StatusNeedsConfig: "needs-config", StatusTimeout: "timeout", StatusNotScannedHere: "not-scanned-here",
	StatusFailed: "failed",
}

// Statuses lists every status, in order.
func Statuses() []Status {
	return []Status{StatusOK, StatusFindings, StatusFailedFetch, StatusFailedInstall, StatusFailedStart, StatusNeedsConfig, StatusTimeout, StatusFailed, StatusNotScannedHere}
}

// Failed says whether the status is a failure a later run may not meet
// (the network, a slow machine): what --retry runs again.
func (s Status) Failed() bool {
	return s == StatusFailedFetch || s == StatusFailedInstall || s == StatusFailedStart || s == StatusTimeout || s == StatusFailed
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText keeps the JSON a name.
func (s Status) MarshalText() ([]byte, error) {
	if _, ok := statusNames[s]; !ok {
		return nil, fmt.Errorf("marshalling %s: no such status", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a name.
func (s *Status) UnmarshalText(b []byte) error {
	for v, n := range statusNames {
		if n == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown status %q", b)
}

var (
	// ErrFetch is wrapped by every error of resolving or downloading.
	ErrFetch = errors.New("fetch")
	// ErrInstall is wrapped by every error of installing a downloaded
	// package or finding its entry point.
	ErrInstall = errors.New("install")
	// ErrNotScannedHere is wrapped when a spec's kind has no installer.
	ErrNotScannedHere = errors.New("not scanned here")
)

// problemRunTimeout is the report's problem kind for a run past its bound.
const problemRunTimeout = "run-timeout"

// StatusOf says how a scan ended from its report (nil when none) and
// error. failOn is the threshold of the findings status.
func StatusOf(rep *report.Report, err error, failOn verdict.FailOn) Status {
	if errors.Is(err, sandbox.ErrSandboxLost) {
		return StatusFailed
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return StatusTimeout
	}
	if rep != nil {
		for _, p := range rep.Problems {
			if p.Kind == report.ProblemSandboxLost {
				return StatusFailed
			}
			if p.Kind == problemRunTimeout {
				return StatusTimeout
			}
		}
	}
	if errors.Is(err, sandbox.ErrServerStart) || rep == nil || (err != nil && len(rep.Tools) == 0) {
		return StatusFailedStart
	}
	if verdict.Fails(rep, failOn) {
		return StatusFindings
	}
	return StatusOK
}

// statusOfInstall maps an installer's error to a status.
func statusOfInstall(err error) Status {
	switch {
	case errors.Is(err, sandbox.ErrSandboxLost):
		return StatusFailed // the install's sandbox was lost: no result
	case errors.Is(err, ErrNotScannedHere):
		return StatusNotScannedHere
	case errors.Is(err, ErrInstall):
		return StatusFailedInstall
	case errors.Is(err, context.DeadlineExceeded):
		return StatusTimeout
	}
	return StatusFailedFetch
}
