package depguard

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// docPath is the page that draws the packages and states the rules.
const docPath = "../../docs/architecture.md"

// TestArchitectureDocListsEveryPackage: docs/architecture.md's package
// table names every package of the module, and no other.
func TestArchitectureDocListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "| `"); ok {
			if p, _, ok := strings.Cut(rest, "`"); ok {
				documented = append(documented, p)
			}
		}
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var listed []string
	for _, p := range strings.Fields(string(out)) {
		listed = append(listed, strings.TrimPrefix(p, module+"/"))
	}
	slices.Sort(documented)
	slices.Sort(listed)
	for _, p := range listed {
		if _, ok := slices.BinarySearch(documented, p); !ok {
			t.Errorf("%s: not in %s's package table", p, docPath)
		}
	}
	for _, p := range documented {
		if _, ok := slices.BinarySearch(listed, p); !ok {
			t.Errorf("%s: in %s's package table, not a package", p, docPath)
		}
	}
}

// TestArchitectureDocStatesTheRules: the page's rules block is the
// guard's rules, one line each, as rule.String prints them.
func TestArchitectureDocStatesTheRules(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Dependency rules\n")
	if !ok {
		t.Fatalf("%s has no Dependency rules section", docPath)
	}
	_, block, ok := strings.Cut(rest, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatalf("%s: the Dependency rules section has no fenced block", docPath)
	}
	var want strings.Builder
	for _, r := range boundaries() {
		want.WriteString(r.String() + "\n")
	}
	if block != want.String() {
		t.Errorf("%s's rules block:\n%s\nthe guard's rules:\n%s", docPath, block, want.String())
	}
}
