// Package corpus scans a list of real stdio MCP servers from npm, as a
// new user would (no probe files, default flags but --package), and
// summarizes how much of each the scan exercised: `make corpus`.
package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Server is one line of the servers file.
type Server struct {
	// Package is the npm name, Version the pinned version.
	Package, Version string
	// Entry is the script node runs, relative to the package's directory;
	// Args follow it.
	Entry string
	Args  []string
	// Env is KEY=VAL for the server (--env).
	Env []string
	// Scripts runs the package's install scripts (npm install without
	// --ignore-scripts): for a package that needs them.
	Scripts bool
	// Why is the line's trailing comment: what the server is in the corpus
	// for.
	Why string
}

// Spec is the package as npm takes it: name@version.
func (s Server) Spec() string { return s.Package + "@" + s.Version }

// Slug names the server's cache and result files.
func (s Server) Slug() string {
	return strings.NewReplacer("@", "", "/", "__").Replace(s.Package) + "@" + s.Version
}

// ErrSyntax is wrapped by every error of a malformed servers file.
var ErrSyntax = errors.New("servers file")

// Parse reads a servers file: one server a line,
//
//	PACKAGE@VERSION ENTRY [ARG...] [env:KEY=VAL...] [+scripts] [# why]
//
// blank lines and lines starting with # ignored.
func Parse(r io.Reader) ([]Server, error) {
	var out []Server
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, why, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		at := strings.LastIndex(f[0], "@")
		if at <= 0 || at == len(f[0])-1 || len(f) < 2 {
			return nil, fmt.Errorf("%w: line %d: want PACKAGE@VERSION ENTRY [ARG...]", ErrSyntax, n)
		}
		s := Server{Package: f[0][:at], Version: f[0][at+1:], Entry: f[1], Why: strings.TrimSpace(why)}
		for _, a := range f[2:] {
			switch {
			case strings.HasPrefix(a, "env:"):
				kv := strings.TrimPrefix(a, "env:")
				if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
					return nil, fmt.Errorf("%w: line %d: %q: want env:KEY=VAL", ErrSyntax, n, a)
				}
				s.Env = append(s.Env, kv)
			case a == "+scripts":
				s.Scripts = true
			default:
				s.Args = append(s.Args, a)
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// Options is a corpus run.
type Options struct {
	// Binary is mcpsandbox; Cache where packages are installed (one
	// prefix per server, kept between runs); Results where the reports go.
	Binary, Cache, Results string
	// Jobs is how many scans run at once.
	Jobs int
	// Image is the image every scan runs in (--image): a content-tagged
	// ref, not :latest, which another build on the same engine may move.
	Image string
	// Flags are added to every scan.
	Flags []string
	// Log gets progress lines.
	Log io.Writer
}

// PackageTarget is where the scan shows the installed prefix (--package).
const PackageTarget = "/package"

// Install installs s under cache (npm install --prefix), unless it is
// there already, and returns the prefix.
func Install(ctx context.Context, cache string, s Server, log io.Writer) (string, error) {
	dir := filepath.Join(cache, s.Slug())
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", s.Package, "package.json")); err == nil {
		var pj struct{ Version string }
		if json.Unmarshal(b, &pj) == nil && pj.Version == s.Version {
			return dir, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("installing %s: %w", s.Spec(), err)
	}
	args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", s.Spec()}
	if !s.Scripts {
		args = append(args, "--ignore-scripts")
	}
	cmd := exec.CommandContext(ctx, "npm", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	fmt.Fprintf(log, "installed %s\n", s.Spec())
	return dir, nil
}

// ScanArgs is the command line of s's scan, its report written to out.
func ScanArgs(s Server, prefix, out string, flags []string) []string {
	args := []string{"scan", "--format", "json", "--out", out, "--fail-on", "never", "--package", prefix + ":" + PackageTarget}
	for _, e := range s.Env {
		args = append(args, "--env", e)
	}
	args = append(args, flags...)
	args = append(args, "--", "node", PackageTarget+"/node_modules/"+s.Package+"/"+s.Entry)
	return append(args, s.Args...)
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
		if c.IsError || c.Error != "" {
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

// Run installs and scans every server, Jobs at a time, and returns the
// rows in the file's order. A server that fails to install or scan has a
// row with Err; the run goes on.
func Run(ctx context.Context, servers []Server, o Options) []Row {
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	rows := make([]Row, len(servers))
	sem := make(chan struct{}, o.Jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(o.Log, format, args...)
	}
	// Installs one at a time (npm's cache is shared), scans in parallel.
	prefixes := make([]string, len(servers))
	for i, s := range servers {
		p, err := Install(ctx, o.Cache, s, o.Log)
		if err != nil {
			rows[i] = Row{Server: s, Err: err.Error()}
			continue
		}
		prefixes[i] = p
	}
	for i, s := range servers {
		if prefixes[i] == "" {
			continue
		}
		wg.Add(1)
		go func(i int, s Server) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out := filepath.Join(o.Results, s.Slug()+".json")
			flags := o.Flags
			if o.Image != "" {
				flags = append([]string{"--image", o.Image}, flags...)
			}
			cmd := exec.CommandContext(ctx, o.Binary, ScanArgs(s, prefixes[i], out, flags)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			logf("scanning %s\n", s.Spec())
			err := cmd.Run()
			b, rerr := os.ReadFile(out)
			var r report.Report
			if rerr == nil {
				rerr = json.Unmarshal(b, &r)
			}
			if rerr != nil {
				rows[i] = Row{Server: s, Err: fmt.Sprintf("no report (%v): %s", err, lastLine(stderr.String()))}
				return
			}
			rows[i] = Summarize(s, r)
			if err != nil {
				rows[i].Err = fmt.Sprintf("%v: %s", err, lastLine(stderr.String()))
			}
			logf("scanned %s\n", s.Spec())
		}(i, s)
	}
	wg.Wait()
	return rows
}

// BuildImage builds (or finds up to date) the image name with binary and
// returns its content-tagged ref, which the build prints last.
func BuildImage(ctx context.Context, binary, name string) (string, error) {
	out, err := exec.CommandContext(ctx, binary, "images", "build", name).Output()
	if err != nil {
		return "", fmt.Errorf("building the %s image: %w", name, err)
	}
	ref := lastLine(string(out))
	if !strings.Contains(ref, ":") {
		return "", fmt.Errorf("building the %s image: no ref in %q", name, out)
	}
	return ref, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
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
