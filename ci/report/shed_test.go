package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShedTextsCutsWholeCharacters: what ShedTexts keeps of a text is
// valid UTF-8, says how long the text was, and is no longer than it.
func TestShedTextsCutsWholeCharacters(t *testing.T) {
	r := New()
	long := strings.Repeat("é", 200) // 400 bytes, two to a character
	r.Tools = []Tool{{Name: "t", Description: "x" + long, Title: "short"}}
	r.Server.StderrTail = long
	r.Server.StdoutNoiseSample = []string{long}
	r.Problems = []Problem{{Kind: "k", Message: long}}
	r.Calls = []Call{{Seq: 1, Error: long}}
	if n := r.Shed(ShedTexts); n != 5 {
		t.Fatalf("shed %d texts, want 5", n)
	}
	for _, s := range []string{r.Tools[0].Description, r.Server.StderrTail, r.Server.StdoutNoiseSample[0], r.Problems[0].Message, r.Calls[0].Error} {
		if !utf8.ValidString(s) || len(s) >= len(long) || !strings.Contains(s, "bytes, cut over the report bound") {
			t.Errorf("cut to %q", s)
		}
	}
	if r.Tools[0].Title != "short" {
		t.Errorf("a short title was cut: %q", r.Tools[0].Title)
	}
	if n := r.Shed(ShedTexts); n != 0 {
		t.Errorf("shedding again changed %d texts", n)
	}
}
