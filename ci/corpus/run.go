package corpus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Options is a corpus run.
type Options struct {
	// Binary is mcpsandbox; Cache is bulk's --cache (tarballs and
	// installed trees by content, kept between runs); Results bulk's
	// results directory.
	Binary, Cache, Results string
	// Jobs is how many packages bulk scans at once.
	Jobs int
	// Image is bulk's --image ("" for bulk's default: the node image by
	// its content tag).
	Image string
	// Resume scans only what the results directory does not have yet;
	// else every server is scanned again (--force).
	Resume bool
	// Flags are added to the bulk command (scan flags it passes on).
	Flags []string
	// Stderr gets bulk's progress.
	Stderr io.Writer
}

// listFile is the bulk list the run writes into the results directory.
const listFile = "corpus-list.txt"

// ScanTimeout is each package's bound (bulk --timeout): scan's own
// default, not bulk's 5 minutes, which desktop-commander's replays pass
// on a loaded machine. A --timeout in Flags comes later and wins.
const ScanTimeout = "10m"

// BulkArgs is the bulk command line of a run on list.
func BulkArgs(o Options, list string) []string {
	args := []string{"bulk", "-j", strconv.Itoa(max(o.Jobs, 1)), "--results", o.Results, "--timeout", ScanTimeout}
	if o.Cache != "" {
		args = append(args, "--cache", o.Cache)
	}
	if o.Image != "" {
		args = append(args, "--image", o.Image)
	}
	if !o.Resume {
		args = append(args, "--force")
	}
	args = append(args, o.Flags...)
	return append(args, list)
}

// Row is one server's line of the table.
type Row struct {
	Server Server
	// Tools listed; Calls made, CallsFailed of them with isError or no
	// result; Exercised the tools with at least one non-error result.
	Tools, Calls, CallsFailed, Exercised int
	Findings, Problems                   int
	// Complete is the report's: every planned step ran.
	Complete bool
	// Err is why there is no report (install or scan failure).
	Err string
}

// Summarize reads a report into a row.
func Summarize(s Server, r report.Report) Row {
	row := Row{Server: s, Tools: len(r.Tools), Calls: len(r.Calls), Findings: len(r.Findings), Problems: len(r.Problems), Complete: r.Complete}
	ok := map[string]bool{}
	for _, c := range r.Calls {
		if !report.Succeeded(c) {
			row.CallsFailed++
			continue
		}
		ok[c.Tool] = true
	}
	for _, t := range r.Tools {
		if ok[t.Name] {
			row.Exercised++
		}
	}
	return row
}

// Run scans the servers with `mcpsandbox bulk` (bulk fetches and
// installs each with none of its code run, into Cache, and scans it as
// `scan` does) and returns their rows in the file's order, read from
// bulk's results: its state and each package's report. A server bulk
// could not fetch, install or scan has a row with Err, its status and
// why; the run goes on. The error is bulk's when the batch itself did
// not run (or was interrupted: the rows are those done).
func Run(ctx context.Context, servers []Server, o Options) ([]Row, error) {
	if err := os.MkdirAll(o.Results, 0o755); err != nil {
		return nil, fmt.Errorf("corpus results: %w", err)
	}
	var list strings.Builder
	if err := WriteList(&list, servers); err != nil {
		return nil, err
	}
	path := filepath.Join(o.Results, listFile)
	if err := os.WriteFile(path, []byte(list.String()), 0o644); err != nil {
		return nil, fmt.Errorf("corpus list: %w", err)
	}
	cmd := exec.CommandContext(ctx, o.Binary, BulkArgs(o, path)...)
	cmd.Stdout, cmd.Stderr = o.Stderr, o.Stderr
	runErr := cmd.Run()
	if runErr != nil {
		runErr = fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), runErr)
	}
	state, err := bulk.LoadState(o.Results)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	return Rows(servers, state, o.Results), runErr
}

// Rows are the servers' rows from a bulk state (by spec key) and the
// reports in results; a server the state does not have is left out.
func Rows(servers []Server, state map[string]bulk.Result, results string) []Row {
	var rows []Row
	for _, s := range servers {
		specs, bad := bulk.ParseList("corpus", strings.NewReader(s.ListLine()))
		if len(bad) > 0 || len(specs) != 1 {
			rows = append(rows, Row{Server: s, Err: fmt.Sprintf("not a bulk spec: %v", bad)})
			continue
		}
		r, ok := state[specs[0].Key()]
		if !ok {
			continue
		}
		if r.Version != "" {
			s.Version = r.Version
		}
		row := Row{Server: s}
		if r.Report != "" {
			var rep report.Report
			b, err := os.ReadFile(filepath.Join(results, filepath.FromSlash(r.Report)))
			if err == nil {
				err = json.Unmarshal(b, &rep)
			}
			if err != nil {
				row.Err = fmt.Sprintf("%s: report %s: %v", r.Status, r.Report, err)
				rows = append(rows, row)
				continue
			}
			row = Summarize(s, rep)
		}
		if r.Status != bulk.StatusOK && r.Status != bulk.StatusFindings {
			row.Err = r.Status.String()
			if r.Why != "" {
				row.Err += ": " + report.OneLine(r.Why)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteTable prints the rows as a Markdown table with a total line.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| server | version | tools | calls | calls failed | tools with ≥1 non-error result | findings | problems |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	var t Row
	for _, r := range rows {
		ex := fmt.Sprintf("%d", r.Exercised)
		if r.Tools > 0 {
			ex = fmt.Sprintf("%d (%d%%)", r.Exercised, 100*r.Exercised/r.Tools)
		}
		note := ""
		if r.Err != "" {
			note = " (" + strings.ReplaceAll(r.Err, "|", "/") + ")"
		} else if !r.Complete {
			note = " (incomplete)"
		}
		fmt.Fprintf(w, "| %s%s | %s | %d | %d | %d | %s | %d | %d |\n", r.Server.Package, note, r.Server.Version, r.Tools, r.Calls, r.CallsFailed, ex, r.Findings, r.Problems)
		t.Tools += r.Tools
		t.Calls += r.Calls
		t.CallsFailed += r.CallsFailed
		t.Exercised += r.Exercised
		t.Findings += r.Findings
		t.Problems += r.Problems
	}
	ex := "0"
	if t.Tools > 0 {
		ex = fmt.Sprintf("%d (%d%%)", t.Exercised, 100*t.Exercised/t.Tools)
	}
	fmt.Fprintf(w, "| **total** (%d servers) | | %d | %d | %d | %s | %d | %d |\n", len(rows), t.Tools, t.Calls, t.CallsFailed, ex, t.Findings, t.Problems)
}
