package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestNoPlantedValueIsWritten: a server that sends the run's planted
// values in every encoding the scan matches (and in other cases, and
// hidden behind JSON escapes) everywhere it can (serverInfo, tool names,
// descriptions, schemas, results, errors, stderr, file names and
// contents, DNS names, URL paths), with invalid UTF-8 and unpaired
// surrogates in each of those places. Every byte of every output of the
// scan (each report format, the transcript, the baseline, the contract,
// the -v log) carries none of them, each output decodes strictly, and the
// exfiltration is still found.
func TestNoPlantedValueIsWritten(t *testing.T) {
	t.Parallel()
	const seed = 7
	bait := probes.NewBait(seed)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	flags := []string{"-v", "--network", "sinkhole", "--bait-seed", strconv.Itoa(seed),
		"--report", "text=" + out("report.txt"), "--report", "markdown=" + out("report.md"),
		"--report", "sarif=" + out("report.sarif"), "--report", "junit=" + out("report.xml"), "--report", "json=" + out("report2.json"),
		"--transcript", out("transcript.jsonl"), "--write-baseline", out("baseline.json"), "--contract-out", out("contract.json"),
		"--fail-on", "never"}
	code, rep, stderr := scanFixture(t, flags, "leaky")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	outputs := map[string][]byte{"report.json (--out)": rep, "-v log and notices (stderr)": []byte(stderr)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(out(e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		outputs[e.Name()] = b
	}
	if len(outputs) != 10 {
		t.Errorf("%d outputs, want 10: %v", len(outputs), keys(outputs))
	}

	// Each output is what its readers accept, strictly.
	for name, b := range outputs {
		var err error
		switch filepath.Ext(name) {
		case ".json", ".sarif", ".json (--out)":
			err = reporttest.StrictJSON(b, false)
		case ".jsonl":
			err = reporttest.StrictJSON(b, true)
		case ".xml":
			err = strictXML(b)
		default:
			if !utf8.Valid(b) {
				err = errors.New("not valid UTF-8")
			}
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// No planted value, in any form the scan matches (bait.Find) or as
	// a name in any case, in any byte written, nor in the bytes the
	// transcript keeps in base64.
	values := []string{bait.Project, bait.User}
	for name, b := range outputs {
		texts := []string{string(b)}
		if strings.HasSuffix(name, ".jsonl") {
			texts = append(texts, rawFrames(t, b)...)
		}
		for _, s := range texts {
			if found := bait.Find(s); len(found) > 0 {
				t.Errorf("%s carries %v", name, found)
			}
			for _, v := range values {
				if i := strings.Index(strings.ToLower(s), v); i >= 0 {
					t.Logf("%s: ...%q...", name, s[max(0, i-200):min(len(s), i+100)])
					t.Errorf("%s carries %q", name, v)
				}
			}
		}
	}

	// The server's bytes are escaped as documented, the leak is still
	// found and named by role.
	r := decode(t, rep)
	var info bytes.Buffer
	json.Compact(&info, r.Server.ServerInfo)
	if !strings.Contains(info.String(), `"leaky\\xff\\xfe<aws-access-key-id>`) || !strings.Contains(info.String(), `"version":"1.0\\ud800"`) {
		t.Errorf("serverInfo %s", r.Server.ServerInfo)
	}
	var badName, exfil, disclosedTool, disclosedServer bool
	for _, tool := range r.Tools {
		badName = badName || tool.Name == `bad\xff\xfename`
	}
	for _, f := range r.Findings {
		exfil = exfil || (f.Rule == rules.SecretExfiltration && strings.Contains(strings.Join(f.Evidence, "\n"), "<aws-access-key-id"))
		ev := strings.Join(f.Evidence, "\n")
		disclosedTool = disclosedTool || (f.Rule == rules.SecretDisclosed && f.Tool == "leak_all" && strings.Contains(ev, "<github-token> in the result of call"))
		disclosedServer = disclosedServer || (f.Rule == rules.SecretDisclosed && f.Tool == "" && strings.Contains(ev, "<ssh-private-key> in the server's stderr"))
	}
	if !disclosedTool || !disclosedServer {
		t.Errorf("%s on leak_all's result: %v, on the server's stderr: %v; findings %+v", rules.SecretDisclosed, disclosedTool, disclosedServer, r.Findings)
	}
	if !badName || !exfil {
		t.Errorf("tool named with \\xNN: %v; %s naming a role: %v; tools %+v findings %+v", badName, rules.SecretExfiltration, exfil, r.Tools, r.Findings)
	}
	if !strings.Contains(r.Server.StderrTail, `leaky starting \xff\xfe`) {
		t.Errorf("stderr tail %q", r.Server.StderrTail)
	}
	if !bytes.Contains(outputs["transcript.jsonl"], []byte(`"raw":"`)) {
		t.Error("no frame of the transcript keeps its bytes (raw)")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// rawFrames returns the bytes the transcript's frames keep in base64.
func rawFrames(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var fr struct {
			Raw []byte `json:"raw"`
		}
		if err := dec.Decode(&fr); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if fr.Raw != nil {
			out = append(out, string(fr.Raw))
		}
	}
}

// strictXML checks that b is well-formed XML in valid UTF-8.
func strictXML(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("not valid UTF-8")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
