package formats

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Names lists the formats.
func Names() []string { return []string{"json", "text", "markdown", "sarif", "junit"} }

// Write writes r in format.
func Write(w io.Writer, format string, r *report.Report, version string) error {
	switch format {
	case "json":
		return report.WriteJSON(w, r)
	case "text":
		return WriteText(w, r)
	case "markdown", "md":
		return WriteMarkdown(w, r)
	case "sarif":
		return WriteSARIF(w, r, version)
	case "junit":
		return WriteJUnit(w, r)
	}
	return fmt.Errorf("unknown report format %q (want one of %s)", format, strings.Join(Names(), ", "))
}

// roundRef names a problem's round with --rounds N: " (round 2)".
func roundRef(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", n)
}

func callRef(seq int) string {
	if seq == 0 {
		return ""
	}
	return fmt.Sprintf(" (call %d)", seq)
}

func serverName(r *report.Report) string {
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	json.Unmarshal(r.Server.ServerInfo, &info)
	if info.Name == "" {
		return strings.Join(r.Server.Command, " ")
	}
	if info.Version != "" {
		return info.Name + " " + info.Version
	}
	return info.Name
}

// fingerprint is the finding's report.Fingerprint, computed when the
// report did not go through verdict.Finish.
func fingerprint(f report.Finding) string {
	if f.Fingerprint != "" {
		return f.Fingerprint
	}
	return report.Fingerprint(f)
}
