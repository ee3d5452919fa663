package probes

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestHoneytokensAreUniqueAndFoundEncoded(t *testing.T) {
	a, b := NewBait(RandomSeed()).Tokens, NewBait(RandomSeed()).Tokens
	if reflect.DeepEqual(a, b) || !strings.HasPrefix(a.AWSKeyID, "AKIA") || len(a.AWSKeyID) != 20 || !strings.HasPrefix(a.GitHubToken, "ghp_") {
		t.Fatalf("tokens %+v %+v", a, b)
	}
	for _, data := range []string{
		"aws_secret_access_key = " + a.AWSSecret,
		"q=" + base64.StdEncoding.EncodeToString([]byte(a.AWSSecret)),
		strings.ToUpper(hexOf(a.AWSSecret)),
	} {
		if got := a.Find(data); !reflect.DeepEqual(got, []string{"aws-secret-access-key"}) {
			t.Errorf("Find(%q) = %q", data, got)
		}
	}
	if got := a.Find("nothing here " + b.AWSSecret); got != nil {
		t.Errorf("another run's token matched: %q", got)
	}
	seeds := NewBait(1).Seeds()
	c := NewBait(1).Canary
	var paths []string
	for _, s := range seeds {
		paths = append(paths, s.Path)
	}
	for _, want := range []string{"/home/sandbox/.aws/credentials", "/home/sandbox/.ssh/id_ed25519", "/workspace/.env", c.Text, c.JSON, c.Nested + "/util.js"} {
		found := false
		for _, p := range paths {
			found = found || p == want
		}
		if !found {
			t.Errorf("no seed at %s", want)
		}
	}
}

// TestBaitIsDrawnFromTheSeed: one seed draws the same names and values
// every time; another draws others; no name or content says what it is
// for; the planted files' sizes do not depend on the draw.
func TestBaitIsDrawnFromTheSeed(t *testing.T) {
	if !reflect.DeepEqual(NewBait(42), NewBait(42)) || !reflect.DeepEqual(NewBait(42).Seeds(), NewBait(42).Seeds()) {
		t.Fatal("seed 42 drew two baits")
	}
	projects := map[string]bool{}
	sizes := map[string]int{}
	for seed := uint64(0); seed < 200; seed++ {
		b := NewBait(seed)
		projects[b.Project] = true
		if b.Canary.Dir != "/workspace/"+b.Project {
			t.Fatalf("seed %d: dir %s for project %s", seed, b.Canary.Dir, b.Project)
		}
		for _, s := range b.Seeds() {
			for _, tell := range []string{"canary", "mcpsandbox", "sandbox-", "honeytoken", "probe"} {
				if strings.Contains(strings.ToLower(s.Path+s.Content), tell) {
					t.Errorf("seed %d: %s says %q:\n%s", seed, s.Path, tell, s.Content)
				}
			}
			if s.Age < time.Hour || s.Age > 6*7*24*time.Hour+time.Hour || s.Role == "" {
				t.Errorf("seed %d: %s: age %s, role %q", seed, s.Path, s.Age, s.Role)
			}
			if strings.HasSuffix(s.Path, ".json") && !json.Valid([]byte(s.Content)) {
				t.Errorf("%s is not JSON", s.Path)
			}
			if n, ok := sizes[s.Role]; ok && n != len(s.Content) {
				t.Errorf("seed %d: %s is %d bytes, %d in another draw", seed, s.Role, len(s.Content), n)
			}
			sizes[s.Role] = len(s.Content)
		}
		if len(b.Project) != len(NewBait(0).Project) || len(b.User) != len(NewBait(0).User) {
			t.Errorf("seed %d: names of another length: %q %q", seed, b.Project, b.User)
		}
	}
	// Sorted among its neighbours, every project lands in one place.
	for _, n := range []string{".env", "README.md", "config", "core", "core.js", "corepack", "counter.log", "data.json", "node_modules", "src", "zz"} {
		first := strings.Compare(n, NewBait(0).Project)
		for p := range projects {
			if strings.Compare(n, p) != first {
				t.Errorf("%q sorts before %q but not before %q", n, NewBait(0).Project, p)
			}
		}
	}
	if len(projects) < 100 {
		t.Errorf("200 seeds drew only %d projects", len(projects))
	}
}

// TestPlaceholdersHideTheDraw: a text mentioning one seed's bait, redacted
// with that seed's placeholders, reads the same as the same text for
// another seed.
func TestPlaceholdersHideTheDraw(t *testing.T) {
	text := func(b Bait) string {
		var parts []string
		for _, s := range b.Seeds() {
			parts = append(parts, s.Path)
			if !binaryRoles[s.Role] {
				parts = append(parts, s.Content)
			}
		}
		for _, f := range forms(b.Tokens.AWSSecret) {
			parts = append(parts, "sent "+f)
		}
		parts = append(parts, "sent "+strings.ToUpper(hexOf(b.Tokens.GitHubToken)))
		return report.RedactString(strings.Join(parts, "\n"), b.Placeholders())
	}
	a, b := text(NewBait(1)), text(NewBait(2))
	if a != b {
		t.Errorf("redacted texts differ:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, "/workspace/<project>/README.md") || !strings.Contains(a, "user: <git-user>") || !strings.Contains(a, "<aws-secret-access-key:base64>") {
		t.Errorf("roles missing:\n%s", a)
	}
}

// binaryRoles are the planted files that hold object ids as raw bytes,
// which no text placeholder replaces: git's pack, pack index and index.
var binaryRoles = map[string]bool{"git-pack": true, "git-pack-idx": true, "git-index": true}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}
