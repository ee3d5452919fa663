package probes

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPlantedPDFIsWellFormed: every cross-reference offset of the planted
// PDF points at its object, startxref at the table, and the bytes do not
// depend on the draw but through the names (of fixed lengths).
func TestPlantedPDFIsWellFormed(t *testing.T) {
	sizes := map[int]bool{}
	for seed := uint64(0); seed < 4; seed++ {
		b := NewBait(seed)
		var pdf string
		for _, s := range b.Seeds() {
			if s.Path == b.Canary.PDF {
				pdf = s.Content
			}
		}
		if !strings.HasPrefix(pdf, "%PDF-1.4\n") || !strings.HasSuffix(pdf, "%%EOF\n") || !strings.Contains(pdf, b.Project+": design overview") {
			t.Fatalf("seed %d: no planted PDF at %s:\n%s", seed, b.Canary.PDF, pdf)
		}
		sizes[len(pdf)] = true
		m := regexp.MustCompile(`startxref\n(\d+)\n`).FindStringSubmatch(pdf)
		xref, _ := strconv.Atoi(m[1])
		if !strings.HasPrefix(pdf[xref:], "xref\n0 7\n") {
			t.Fatalf("seed %d: startxref %d points at %q", seed, xref, pdf[xref:xref+10])
		}
		entries := regexp.MustCompile(`(\d{10}) 00000 n `).FindAllStringSubmatch(pdf[xref:], -1)
		if len(entries) != 6 {
			t.Fatalf("seed %d: %d xref entries", seed, len(entries))
		}
		for i, e := range entries {
			off, _ := strconv.Atoi(e[1])
			if want := fmt.Sprintf("%d 0 obj\n", i+1); !strings.HasPrefix(pdf[off:], want) {
				t.Errorf("seed %d: object %d at %d reads %q", seed, i+1, off, pdf[off:off+len(want)])
			}
		}
		n := regexp.MustCompile(`/Length (\d+) >>\nstream\n`).FindStringSubmatchIndex(pdf)
		length, _ := strconv.Atoi(pdf[n[2]:n[3]])
		if !strings.HasPrefix(pdf[n[1]+length:], "endstream") {
			t.Errorf("seed %d: stream length %d does not end at endstream", seed, length)
		}
	}
	if len(sizes) != 1 {
		t.Errorf("the PDF's size depends on the draw: %v", sizes)
	}
}

// TestCanaryFileOffersThePDF: a path property that names PDF points at
// the planted PDF, any other at the text file.
func TestCanaryFileOffersThePDF(t *testing.T) {
	c := NewBait(1).Canary
	for _, tc := range []struct{ name, desc, want string }{
		{"path", "Path to the local PDF file (absolute or relative to cwd).", c.PDF},
		{"pdf_path", "", c.PDF},
		{"path", "Path of the file to read.", c.Text},
	} {
		if got := c.File(tc.name, tc.desc); got != tc.want {
			t.Errorf("File(%q, %q) = %q, want %q", tc.name, tc.desc, got, tc.want)
		}
	}
	if got := (Canary{Text: "/t"}).File("pdf", ""); got != "/t" {
		t.Errorf("a canary without a PDF offers %q", got)
	}
}
