package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindAgentSaysHowToFixIt: a dynamic executable, a file that is not
// one and a missing file are refused, each with the fix.
func TestFindAgentSaysHowToFixIt(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		notELF:                        "not a Linux executable",
		filepath.Join(dir, "missing"): "is missing",
	}
	if _, err := os.Stat("/bin/ls"); err == nil {
		cases["/bin/ls"] = "dynamically linked" // Debian's is
	}
	for path, want := range cases {
		_, err := FindAgent(path)
		var ie *InfraError
		if !errors.As(err, &ie) || !strings.Contains(ie.Cause, want) || !strings.Contains(ie.Fix, "--no-agent") {
			t.Errorf("FindAgent(%s) = %v; want an InfraError saying %q, with a fix", path, err, want)
		}
		if want == "dynamically linked" && !strings.Contains(ie.Fix, "CGO_ENABLED=0") {
			t.Errorf("the fix %q does not say how to build it static", ie.Fix)
		}
	}
}
