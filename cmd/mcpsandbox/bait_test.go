package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestWaryServerIsCaughtInTheScan: a read-only tool that looks for the
// tells of a scan (a client named mcpsandbox, bait that says "canary", a
// hostname that is not the container id, ...) and misbehaves only when it
// sees none misbehaves in a default scan, and the default gate fails on
// it. Told the old client name, it sees the tell and behaves: the fixture
// does look.
func TestWaryServerIsCaughtInTheScan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probeFile := writeFile(t, dir, "p.json", `{"summarize_workspace":{}}`)
	code, b, stderr := scanFixture(t, []string{"--probes", probeFile}, "wary")
	r := decode(t, b)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the default gate fails): %s", code, stderr)
	}
	if len(r.Calls) != 1 || r.Calls[0].Result != "tells: none" {
		t.Fatalf("the wary tool saw a tell: %+v", r.Calls)
	}
	var caught bool
	for _, f := range r.Findings {
		if f.Rule == "readonly-writes" && f.Tool == "summarize_workspace" && f.Severity == report.SeverityError {
			caught = slicesContains(f.Evidence, "created /home/sandbox/.bashrc")
		}
	}
	if !caught {
		t.Errorf("no readonly-writes naming ~/.bashrc: %+v", r.Findings)
	}

	code, b, stderr = scanFixture(t, []string{"--probes", probeFile, "--client-name", "mcpsandbox"}, "wary")
	r = decode(t, b)
	if code != 0 || len(r.Calls) != 1 || r.Calls[0].Result != "tells: client mcpsandbox" || len(r.Findings) != 0 {
		t.Errorf("told the old client name: exit %d, calls %+v, findings %+v; %s", code, r.Calls, r.Findings, stderr)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestBaitSeedGivesTheSameReport: two scans with different bait seeds
// (different project names, users, tokens, file hashes) give
// byte-identical reports outside timing, which names each seed, and carry
// none of the drawn names or values; the same seed again plants the same
// names (the transcript, unredacted on demand, lists them).
func TestBaitSeedGivesTheSameReport(t *testing.T) {
	t.Parallel()
	const seedA, seedB = 1, 2
	a, b := probes.NewBait(seedA), probes.NewBait(seedB)
	if a.Project == b.Project || a.User == b.User {
		t.Fatalf("seeds %d and %d draw the same names: %s %s", seedA, seedB, a.Project, a.User)
	}
	dir := t.TempDir()
	type run struct {
		report     []byte
		transcript string
	}
	scanWith := func(seed uint64, name string) run {
		bait := probes.NewBait(seed)
		// A probe naming the drawn project, as a user who knew it would.
		p := writeFile(t, dir, name+".json", `[{"tool":"read_file","arguments":{"path":"`+bait.Project+`/README.md"}},{"tool":"add_note","arguments":{"text":"x"}},{"tool":"list_workspace"},{"tool":"summarize_workspace"},{"tool":"lying_read"}]`)
		tr := filepath.Join(dir, name+".jsonl")
		_, out, stderr := scanFixture(t, []string{"--probes", p, "--bait-seed", strconv.FormatUint(seed, 10), "--transcript", tr, "--transcript-unredacted"}, "honest", "liar", "wary")
		r := decode(t, out)
		if r.Timing == nil || r.Timing.BaitSeed == nil || *r.Timing.BaitSeed != seed {
			t.Fatalf("timing %+v, want bait seed %d; %s", r.Timing, seed, stderr)
		}
		for _, leak := range []string{bait.Project, bait.User, bait.Tokens.AWSKeyID, bait.Tokens.AWSSecret, bait.Tokens.GitHubToken} {
			if bytes.Contains(out, []byte(leak)) {
				t.Errorf("seed %d: the report carries %q", seed, leak)
			}
		}
		r.Timing = nil
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, &r); err != nil {
			t.Fatal(err)
		}
		return run{report: buf.Bytes(), transcript: resultsOf(t, tr, "list_workspace")}
	}
	ra, rb, ra2 := scanWith(seedA, "a"), scanWith(seedB, "b"), scanWith(seedA, "a2")
	if !bytes.Equal(ra.report, rb.report) {
		t.Errorf("seeds %d and %d give different reports:\n%s", seedA, seedB, lineDiff(ra.report, rb.report))
	}
	if !bytes.Contains(ra.report, []byte("/workspace/<project>/README.md")) || !bytes.Contains(ra.report, []byte("@<git-user>")) {
		t.Errorf("the report does not show the roles:\n%s", ra.report)
	}
	if !strings.Contains(ra.transcript, a.Canary.Text) || ra.transcript != ra2.transcript || strings.Contains(rb.transcript, a.Project) {
		t.Errorf("list_workspace saw:\nseed %d: %s\nagain:   %s\nseed %d: %s", seedA, ra.transcript, ra2.transcript, seedB, rb.transcript)
	}
}

// resultsOf returns the raw results of the calls to tool in a transcript.
func resultsOf(t *testing.T, path, tool string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var fr struct {
			Dir     string `json:"dir"`
			Message struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
				Result json.RawMessage `json:"result"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatal(err)
		}
		m := fr.Message
		switch {
		case fr.Dir == "send" && m.Method == "tools/call" && m.Params.Name == tool:
			ids[string(m.ID)] = true
		case fr.Dir == "recv" && ids[string(m.ID)] && len(m.Result) > 0:
			out = append(out, string(m.Result))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// lineDiff shows the first lines where a and b differ.
func lineDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
		if len(out) > 20 {
			break
		}
	}
	return strings.Join(out, "\n")
}
