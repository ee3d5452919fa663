package readers_test

import (
	"bytes"
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
	"strconv"
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
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

var update = flag.Bool("update", false, "rewrite the table in docs/readers.md from what the readers do")

// The readers, in the table's order, with their column titles.
var readers = []struct{ name, title string }{
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
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		seen[c.name] = true
		line := []byte(c.line)
		j := judge(line)
		judged[c.name] = j
		inputs = append(inputs, input{c.name, line, c.probes})
		if j.err == nil {
			inputs = append(inputs, input{c.name + canonSuffix, j.forwarded, c.probes})
		}
	}
	payload, err := json.Marshal(map[string]any{"requestId": requestID, "cases": inputs})
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
		for _, r := range readers {
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

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := results[c.name]
			for _, r := range readers {
				t.Logf("%-18s %v", r.name, orig[r.name])
			}
			j := judged[c.name]
			t.Logf("mcpsandbox finds: %v (id-form: %v)", j.found, j.idForm)
			if got, want := tab.rows[c.name], docRows[c.name]; got != want {
				t.Errorf("the readers read otherwise than %s says (go test ./sandbox/wire/readers/ -update rewrites it):\n got: %s\nwant: %s", docPath, got, want)
			}

			var problems []string
			if parts := disagreements(orig, c.probes); len(parts) > 0 && len(j.found) == 0 && !j.idForm {
				problems = append(problems, fmt.Sprintf("the readers part (at %s) and mcpsandbox finds nothing", strings.Join(parts, ", ")))
			}
			if j.err == nil {
				ck := c.name + canonSuffix
				if parts := disagreements(results[ck], c.probes); len(parts) > 0 {
					var b strings.Builder
					for _, r := range readers {
						fmt.Fprintf(&b, "\n  %-18s %v", r.name, results[ck][r.name])
					}
					problems = append(problems, fmt.Sprintf("the line mcpsandbox forwards, %s, still parts the readers (at %s):%s", renderRaw(j.forwarded), strings.Join(parts, ", "), b.String()))
				}
			} else {
				t.Logf("not forwarded: %v", j.err)
			}
			switch {
			case c.gap == "" && len(problems) > 0:
				t.Error(strings.Join(problems, "\n"))
			case c.gap != "" && len(problems) == 0:
				t.Errorf("marked as a gap (%s), but wire settles it now: remove the mark", c.gap)
			case c.gap != "":
				t.Logf("a known gap (%s): %s", c.gap, strings.Join(problems, "\n"))
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

// A judgement is what `mcpsandbox run` makes of a line that answers the
// client's request 1 (sandbox/ambiguity.go): the places wire.Check finds
// where readers part, and id-form when the id is not the request's exact
// form; and the bytes it forwards: wire.Canonical's, with the request's
// id in place of one that Number(id) matches to it (as the TypeScript SDK
// matches). err is why nothing is forwarded (wire refuses the line, or it
// answers no request of the client's: the relay drops it).
type judgement struct {
	found       []wire.Ambiguity
	idForm      bool
	idRewritten bool
	forwarded   []byte
	err         error
}

func judge(line []byte) judgement {
	j := judgement{found: wire.Check(line)}
	j.forwarded, j.err = wire.Canonical(line)
	if j.err != nil {
		return j
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if wire.Unmarshal(j.forwarded, &m) != nil || m.Method != nil || (m.Result == nil && m.Error == nil) ||
		len(m.ID) == 0 || string(m.ID) == "null" {
		return j
	}
	want := strconv.Itoa(requestID)
	if wire.IDKey(m.ID) == want {
		return j
	}
	if n, ok := wire.JSNumber(m.ID); ok && n == requestID {
		j.idForm, j.idRewritten = true, true
		j.forwarded = replaceID(j.forwarded, []byte(want))
		return j
	}
	// A response that answers none of the client's requests is not given
	// to it (the go-sdk would take 1.5 for 1).
	j.idForm = wire.IDKey(m.ID) == ""
	j.forwarded, j.err = nil, fmt.Errorf("the id %s answers none of the client's requests", m.ID)
	return j
}

// replaceID puts id in place of a compact message's top-level id.
func replaceID(msg, id []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		panic(fmt.Sprintf("not an object: %s", msg))
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			panic(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err)
		}
		if key == "id" {
			end := int(dec.InputOffset())
			return slices.Concat(msg[:end-len(v)], id, msg[end:])
		}
	}
	panic(fmt.Sprintf("no id: %s", msg))
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
		for _, r := range readers {
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
	beginMark = "<!-- readers:begin: made by `go test ./sandbox/wire/readers/ -update`; edit the cases (cases_test.go), not this -->\n"
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
	for _, r := range readers {
		b.WriteString(" " + r.title + " |")
	}
	b.WriteString(" readers part | mcpsandbox run |\n|---|---|")
	for range readers {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, c := range cases {
		var row strings.Builder
		labels := make([]string, len(c.probes))
		for i, p := range c.probes {
			labels[i] = probeLabel(p)
		}
		fmt.Fprintf(&row, "| `%s` | %s |", c.name, strings.Join(labels, " · "))
		for _, r := range readers {
			cells := make([]string, len(c.probes))
			for i, p := range c.probes {
				cells[i] = strings.ReplaceAll(results[c.name][r.name][p], "|", `\|`)
			}
			fmt.Fprintf(&row, " `%s` |", strings.Join(cells, " · "))
		}
		parts := "no"
		if len(disagreements(results[c.name], c.probes)) > 0 {
			parts = "yes"
		}
		if c.gap != "" {
			parts += ", gap"
		}
		j := judged[c.name]
		var kinds []string
		for _, a := range j.found {
			if k := "`" + a.Kind.String() + "`"; !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		if j.idForm {
			kinds = append(kinds, "`"+wire.IDForm.String()+"`")
		}
		if len(kinds) == 0 {
			kinds = []string{"—"}
		}
		fwd := "forwarded as is"
		switch {
		case j.err != nil:
			fwd = "not forwarded"
		case j.idRewritten:
			fwd = fmt.Sprintf("forwarded canonical, id %d", requestID)
		case !bytes.Equal(j.forwarded, []byte(c.line)):
			fwd = "forwarded canonical"
		}
		fmt.Fprintf(&row, " %s | %s: %s |", parts, strings.Join(kinds, ", "), fwd)
		tab.rows[c.name] = row.String()
		b.WriteString(row.String() + "\n")
	}
	b.WriteString("\nThe lines (a byte that is not UTF-8 as `<0xNN>`, an invisible character as `<U+NNNN>`):\n\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "- `%s`: %s.\n  `%s`\n", c.name, c.about, displayLine(c.line))
		if c.gap != "" {
			fmt.Fprintf(&b, "  Gap: %s.\n", c.gap)
		}
	}
	tab.text = b.String()
	return tab
}
