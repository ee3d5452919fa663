package bulk

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

// Judge is a Scanner that also judges a report it did not scan (the
// report of an install that failed), under its own verdict config.
type Judge interface {
	Judge(rep *report.Report) error
}

// installed fills a result's install columns from what the install did.
func installed(r *Result, in Installed) {
	if in.Install == nil {
		return
	}
	r.Installed = "sandbox"
	switch {
	case in.Install.Cached:
		r.Installed = "cached"
	case in.Install.Failed:
		r.Installed = "failed"
	}
	r.InstallEffects = InstallEffects(in.Install.Report)
}

// installFailed records an install that failed in the sandbox: its
// report (what the scripts did, judged) is the package's, and its
// findings count as a scan's do. Nothing for other errors.
func installFailed(r *Result, s Spec, o Options, in Installed, err error) error {
	var ie *InstallError
	if !errors.As(err, &ie) || ie.Report == nil {
		return nil
	}
	r.Version, r.Integrity, r.Entry, r.Notes = in.Version, in.Integrity, in.Entry, in.Notes
	rep := ie.Report
	var jerr error
	if j, ok := o.Scanner.(Judge); ok {
		jerr = j.Judge(rep)
	} else {
		jerr = verdict.FinishWithin(rep, verdict.Config{}, verdict.DefaultMaxReport)
	}
	r.Installed = "sandbox"
	r.InstallEffects = InstallEffects(rep)
	var buf bytes.Buffer
	if werr := formats.Write(&buf, "json", rep, o.Version); werr != nil {
		return errors.Join(jerr, werr)
	}
	rel := filepath.Join(reportsDir, s.Slug()+".json")
	if werr := writeAtomic(filepath.Join(o.Results, rel), buf.Bytes()); werr != nil {
		return errors.Join(jerr, werr)
	}
	r.Report = filepath.ToSlash(rel)
	summarize(r, rep)
	return jerr
}

// installCell is the summary's install effects cell: the count, "-" for
// a package whose scripts did not run in a sandbox.
func installCell(r Result) string {
	if r.Installed == "" {
		return "-"
	}
	return strconv.Itoa(r.InstallEffects)
}
