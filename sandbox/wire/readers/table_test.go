package readers_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire/readers"
)

var update = flag.Bool("update", false, "rewrite the table in docs/readers.md from what the readers do")

// The readers, in the table's order, with their column titles.
var readerCols = []struct{ name, title string }{
	{"json-parse", "JSON.parse"},
	{"ts-sdk", "TS SDK"},
	{"python-json", "Python json"},
	{"python-json-bytes", "Python json, bytes"},
	{"go-encoding-json", "Go encoding/json"},
	{"go-sdk", "go-sdk"},
	{"mcpsandbox", "mcpsandbox (wire)"},
}

// canonSuffix keys a case's canonical line among the lines read.
const canonSuffix = "#canonical"

const docPath = "docs/readers.md"

type scriptOutput struct {
	Versions map[string]string                       `json:"versions"`
	Results  map[string]map[string]map[string]string `json:"results"`
}

// TestReaders feeds each case's line, and the line mcpsandbox would
// forward of it (see judge), to every reader, and holds what they read to
// docs/readers.md. Where the readers part on a line, mcpsandbox must find
// an ambiguity (wire.Check, or the runner's id-form), and the forwarded
// line must read alike to all; a row marked gap must still fail one of
// the two.
func TestReaders(t *testing.T) {
	cli := sandboxtest.Docker(t)
	root := sandboxtest.ModuleRoot(t)

	type input struct {
		Key    string   `json:"key"`
		Line   []byte   `json:"line"` // base64 in JSON
		Probes []string `json:"probes"`
	}
	var inputs []input
	judged := map[string]judgement{}
	all := loadJudged(t, root)
	seen := map[string]bool{}
	for _, c := range readers.Cases {
		if seen[c.Name] {
			t.Fatalf("two cases named %s", c.Name)
		}
		seen[c.Name] = true
		line := []byte(c.Line)
		j, ok := all[c.Name]
		if !ok {
			t.Fatalf("%s: not in testdata/judged.json (go test ./sandbox/ -run ReaderCases -update-judged)", c.Name)
		}
		judged[c.Name] = j
		inputs = append(inputs, input{c.Name, line, c.Probes})
		for _, tr := range transports {
			for i, l := range j.forwarded[tr] {
				inputs = append(inputs, input{fmt.Sprintf("%s#%s%d", c.Name, tr, i), []byte(l), c.Probes})
			}
		}
	}
	payload, err := json.Marshal(map[string]any{"requestId": readers.RequestID, "cases": inputs})
	if err != nil {
		t.Fatal(err)
	}

	// One container per runtime, for all the lines.
	testdata := filepath.Join(root, "sandbox", "wire", "readers", "testdata")
	scripts := []struct {
		image  string
		mounts []sandbox.Mount
		argv   []string
	}{
		{sandboxtest.NodeImage(t, cli), []sandbox.Mount{sandboxtest.TSSDK(t),
			{Source: filepath.Join(testdata, "read.mjs"), Target: "/opt/tsclient/read.mjs"}},
			[]string{"node", "/opt/tsclient/read.mjs"}},
		{pythonImage(t, cli), []sandbox.Mount{{Source: filepath.Join(testdata, "read.py"), Target: "/opt/readers/read.py"}},
			[]string{"python3", "/opt/readers/read.py"}},
	}
	outs := make([]scriptOutput, len(scripts))
	errs := make([]error, len(scripts))
	var wg sync.WaitGroup
	for i, s := range scripts {
		runID := label.NewRunID()
		sandboxtest.NoLeftovers(t, cli, runID)
		wg.Go(func() {
			var out []byte
			out, errs[i] = runScript(cli, s.image, runID, s.mounts, payload, s.argv...)
			if errs[i] == nil {
				if err := json.Unmarshal(out, &outs[i]); err != nil {
					errs[i] = fmt.Errorf("%q: %v: %.300s", s.argv, err, out)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	results := map[string]map[string]map[string]string{} // line key -> reader -> probe -> cell
	versions := map[string]string{"go": strings.TrimPrefix(runtime.Version(), "go"), "go-sdk": moduleVersion(t, root, "github.com/modelcontextprotocol/go-sdk")}
	for _, o := range outs {
		for k, v := range o.Versions {
			versions[k] = v
		}
		for key, byReader := range o.Results {
			if results[key] == nil {
				results[key] = map[string]map[string]string{}
			}
			for r, cells := range byReader {
				results[key][r] = cells
			}
		}
	}
	for _, in := range inputs {
		if results[in.Key] == nil {
			results[in.Key] = map[string]map[string]string{}
		}
		for _, r := range goReaders {
			results[in.Key][r.name] = r.read(in.Line, in.Probes)
		}
		for _, r := range readerCols {
			if results[in.Key][r.name] == nil {
				t.Fatalf("no reading of %s by %s", in.Key, r.name)
			}
		}
	}

	tab := renderTable(versions, results, judged)
	path := filepath.Join(root, docPath)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, block, after, ok := splitDoc(string(doc))
	if !ok {
		t.Fatalf("%s: no %q ... %q block", docPath, beginMark, endMark)
	}
	if *update {
		block = tab.text
		if err := os.WriteFile(path, []byte(before+block+after), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docRows := tableRows(block)

	for _, c := range readers.Cases {
		t.Run(c.Name, func(t *testing.T) {
			orig := results[c.Name]
			for _, r := range readerCols {
				t.Logf("%-18s %v", r.name, orig[r.name])
			}
			j := judged[c.Name]
			t.Logf("mcpsandbox finds: %v", j.found)
			if got, want := tab.rows[c.Name], docRows[c.Name]; got != want {
				t.Errorf("the readers read otherwise than %s says (go test ./sandbox/wire/readers/ -update rewrites it):\n got: %s\nwant: %s", docPath, got, want)
			}

			var problems []string
			if parts := disagreements(orig, c.Probes); len(parts) > 0 && len(j.found) == 0 {
				problems = append(problems, fmt.Sprintf("the readers part (at %s) and mcpsandbox finds nothing", strings.Join(parts, ", ")))
			}
			for _, tr := range transports {
				for i, l := range j.forwarded[tr] {
					if strings.Contains(l, `"error":{"code":-32098`) {
						// The runner's own error in the answer's place: no
						// tool for any reader (JSON.parse reads none, an
						// SDK raises).
						continue
					}
					ck := fmt.Sprintf("%s#%s%d", c.Name, tr, i)
					if parts := disagreements(results[ck], c.Probes); len(parts) > 0 {
						var b strings.Builder
						for _, r := range readerCols {
							fmt.Fprintf(&b, "\n  %-18s %v", r.name, results[ck][r.name])
						}
						problems = append(problems, fmt.Sprintf("the line %s forwards, %s, still parts the readers (at %s):%s", tr, renderRaw([]byte(l)), strings.Join(parts, ", "), b.String()))
					}
				}
			}
			switch {
			case c.Gap == "" && len(problems) > 0:
				t.Error(strings.Join(problems, "\n"))
			case c.Gap != "" && len(problems) == 0:
				t.Errorf("marked as a gap (%s), but wire settles it now: remove the mark", c.Gap)
			case c.Gap != "":
				t.Logf("a known gap (%s): %s", c.Gap, strings.Join(problems, "\n"))
			}
		})
	}
	for name := range docRows {
		if !seen[name] {
			t.Errorf("%s has a row for %s, which is no case", docPath, name)
		}
	}
	if strip(block) != strip(tab.text) {
		t.Errorf("%s's table is not what the readers do: go test ./sandbox/wire/readers/ -update rewrites it", docPath)
	}
	if m := versionLine.FindString(block); m != versionLine.FindString(tab.text) {
		t.Logf("the table was made with other versions (%s); this run: %s", m, versionLine.FindString(tab.text))
	}
}

// A judgement is what mcpsandbox's transports make of a line that
// answers the client's request 1, read from testdata/judged.json (which
// sandbox's TestReaderCasesThrough... tests hold to the code): the kinds
// of the ambiguities the scan records, and the lines the scan gives its
// SDK and run its client (none: not forwarded).
type judgement struct {
	found     []string
	forwarded map[string][]string // by transport: scan, run
}

// transports are the judgement's forwarding paths, in the table's order.
var transports = []string{"scan", "run"}

func loadJudged(t *testing.T, root string) map[string]judgement {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "sandbox", "wire", "readers", "testdata", "judged.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]readers.Judged
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string]judgement{}
	for name, jd := range file {
		j := judgement{found: jd.ScanFound, forwarded: map[string][]string{"scan": jd.Scan}}
		if jd.Run != nil || jd.RunFound != nil {
			j.forwarded["run"] = jd.Run
		}
		out[name] = j
	}
	return out
}

// pythonImage builds mcpsandbox/python from the host's python3 (a no-op
// when its inputs did not change) and returns its reference.
func pythonImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no /usr/bin/python3 on the host for the python image: %v", err)
		}
		t.Skipf("no /usr/bin/python3 on the host for the python image (run ci/host-deps.sh): %v", err)
	}
	res, err := images.Build(context.Background(), cli, "python", images.BuildOptions{})
	if err != nil {
		t.Fatalf("building the python image: %v", err)
	}
	return res.Ref
}

// runScript runs argv in a sandbox (no network) with input on its stdin
// and returns its stdout.
func runScript(cli *client.Client, image, runID string, mounts []sandbox.Mount, input []byte, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := sandbox.Start(ctx, cli, sandbox.ContainerOptions{Image: image, Argv: argv, RunID: runID, Mounts: mounts})
	if err != nil {
		return nil, fmt.Errorf("starting %q in %s: %w", argv, image, err)
	}
	defer c.Close(ctx)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Stdin().Write(input)
		if cerr := c.Stdin().Close(); err == nil {
			err = cerr
		}
		wrote <- err
	}()
	out, err := io.ReadAll(c.Stdout())
	st, exited := c.Exited(ctx, 10*time.Second)
	if serr := c.Stop(ctx); err == nil {
		err = serr
	}
	tail, _, _ := c.Stderr()
	if werr := <-wrote; err == nil {
		err = werr
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q in %s: %w\n%s", argv, image, err, tail)
	case !exited || st.ExitCode != 0:
		return nil, fmt.Errorf("%q in %s: exited %v, code %d\n%s", argv, image, exited, st.ExitCode, tail)
	}
	return out, nil
}

// moduleVersion is the version go.mod requires of module path.
func moduleVersion(t *testing.T, root, path string) string {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(path) + `\s+(v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatalf("go.mod requires no %s", path)
	}
	return string(m[1])
}

var numberCell = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// hintDefaults are the hints' values when a tool says nothing: a reader
// that holds a missing hint as its default reads the same as one that
// holds it as absent.
var hintDefaults = map[string]string{"readOnlyHint": "false", "idempotentHint": "false", "destructiveHint": "true", "openWorldHint": "true"}

// meaning is what a cell means for comparing readers: every error alike,
// null and absent alike (and a hint's default with them), a number by
// its exact value (1.0 is 1, 9007199254740993 is not 9007199254740992);
// "n/a" and "unmatched" take no part.
func meaning(probe, cell string) (string, bool) {
	switch {
	case cell == "n/a" || cell == "unmatched":
		return "", false
	case strings.HasPrefix(cell, "error"):
		return "error", true
	case cell == "absent" || cell == "null":
		if d, ok := hintDefaults[probe[strings.LastIndex(probe, ".")+1:]]; ok {
			return d, true
		}
		return "absent", true
	case numberCell.MatchString(cell):
		if r, ok := new(big.Rat).SetString(cell); ok {
			return "number " + r.RatString(), true
		}
	}
	return cell, true
}

// disagreements lists the probes at which two readers read otherwise.
func disagreements(byReader map[string]map[string]string, probes []string) []string {
	var parts []string
	for _, p := range probes {
		var seen []string
		for _, r := range readerCols {
			if m, ok := meaning(p, byReader[r.name][p]); ok && !slices.Contains(seen, m) {
				seen = append(seen, m)
			}
		}
		if len(seen) > 1 {
			parts = append(parts, p)
		}
	}
	return parts
}

// The table in docs/readers.md lies between these marks.
const (
	beginMark = "<!-- readers:begin: made by `go test ./sandbox/wire/readers/ -update`; edit the cases (cases.go), not this -->\n"
	endMark   = "<!-- readers:end -->\n"
)

var versionLine = regexp.MustCompile(`(?m)^Measured with .*$`)

func splitDoc(doc string) (before, block, after string, ok bool) {
	i := strings.Index(doc, beginMark)
	j := strings.Index(doc, endMark)
	if i < 0 || j < i {
		return "", "", "", false
	}
	i += len(beginMark)
	return doc[:i], doc[i:j], doc[j:], true
}

// strip is a block without its versions line.
func strip(block string) string { return versionLine.ReplaceAllString(block, "") }

var rowName = regexp.MustCompile("^\\| `([^`]+)` \\|")

// tableRows are the table's rows by case name.
func tableRows(block string) map[string]string {
	rows := map[string]string{}
	for _, l := range strings.Split(block, "\n") {
		if m := rowName.FindStringSubmatch(l); m != nil {
			rows[m[1]] = l
		}
	}
	return rows
}

type table struct {
	text string
	rows map[string]string
}

// displayLine is a line as the doc shows it: its characters as they are,
// but a byte that is not UTF-8 and an invisible character spelt out.
func displayLine(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRuneInString(line[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "<0x%02X>", line[i])
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteString(line[i : i+n])
		}
		i += n
	}
	return b.String()
}

func probeLabel(p string) string { return p[strings.LastIndexAny(p, ".")+1:] }

func renderTable(versions map[string]string, results map[string]map[string]map[string]string, judged map[string]judgement) table {
	tab := table{rows: map[string]string{}}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured with node %s, @modelcontextprotocol/sdk %s (zod %s), Python %s, Go %s, go-sdk %s.\n\n",
		versions["node"], versions["@modelcontextprotocol/sdk"], versions["zod"], versions["python"], versions["go"], versions["go-sdk"])
	b.WriteString("| case | probes |")
	for _, r := range readerCols {
		b.WriteString(" " + r.title + " |")
	}
	b.WriteString(" readers part | mcpsandbox |\n|---|---|")
	for range readerCols {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, c := range readers.Cases {
		var row strings.Builder
		labels := make([]string, len(c.Probes))
		for i, p := range c.Probes {
			labels[i] = probeLabel(p)
		}
		fmt.Fprintf(&row, "| `%s` | %s |", c.Name, strings.Join(labels, " · "))
		for _, r := range readerCols {
			cells := make([]string, len(c.Probes))
			for i, p := range c.Probes {
				cells[i] = strings.ReplaceAll(results[c.Name][r.name][p], "|", `\|`)
			}
			fmt.Fprintf(&row, " `%s` |", strings.Join(cells, " · "))
		}
		parts := "no"
		if len(disagreements(results[c.Name], c.Probes)) > 0 {
			parts = "yes"
		}
		if c.Gap != "" {
			parts += ", gap"
		}
		j := judged[c.Name]
		var kinds []string
		for _, k := range j.found {
			if k := "`" + k + "`"; !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) == 0 {
			kinds = []string{"—"}
		}
		var fwds []string
		for _, tr := range transports {
			ls, ok := j.forwarded[tr]
			if !ok {
				continue
			}
			fwd := "as is"
			switch {
			case len(ls) == 0:
				fwd = "nothing"
			case len(ls) == 1 && ls[0] == c.Line:
			case len(ls) == 1 && strings.Contains(ls[0], `"error":{"code":-32098`):
				fwd = "an error in its place"
			default:
				fwd = "the judge's reading"
			}
			fwds = append(fwds, tr+" forwards "+fwd)
		}
		fwd := strings.Join(fwds, "; ")
		fmt.Fprintf(&row, " %s | %s: %s |", parts, strings.Join(kinds, ", "), fwd)
		tab.rows[c.Name] = row.String()
		b.WriteString(row.String() + "\n")
	}
	b.WriteString("\nThe lines (a byte that is not UTF-8 as `<0xNN>`, an invisible character as `<U+NNNN>`):\n\n")
	for _, c := range readers.Cases {
		fmt.Fprintf(&b, "- `%s`: %s.\n  `%s`\n", c.Name, c.About, displayLine(c.Line))
		if c.Gap != "" {
			fmt.Fprintf(&b, "  Gap: %s.\n", c.Gap)
		}
	}
	tab.text = b.String()
	return tab
}
