package main

// The README and docs/ are held here, with no engine: every relative link
// resolves, the README's usage block is the CLI's own usage text, and the
// README stays a page a newcomer reads in ten minutes.

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpsandbox/mcpsandbox/images"
)

// readmeMaxBytes bounds README.md: the depth is in docs/.
const readmeMaxBytes = 15 * 1024

// docRoot is the module's root, found from the test's directory up.
func docRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// docFiles are README.md and docs/*.md, relative to the root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// A docLine is a line of a Markdown file outside fenced code, numbered
// from 1.
type docLine struct {
	n    int
	text string
}

var docFence = regexp.MustCompile("^ *(```+|~~~+)")

// docProse splits a Markdown file into its lines outside fenced code
// blocks (a fence may be indented, as in a list item; it is closed by a
// line of the same character at least as long).
func docProse(text string) []docLine {
	var out []docLine
	fence := ""
	for i, l := range strings.Split(text, "\n") {
		if m := docFence.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				fence = m[1]
				continue
			case m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(l) == m[1]:
				fence = ""
				continue
			}
		}
		if fence == "" {
			out = append(out, docLine{i + 1, l})
		}
	}
	return out
}

var (
	docHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	docHTMLID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	docLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	docTag      = regexp.MustCompile(`<[^>]+>`)
)

// docSlug is the anchor GitHub gives a heading's text: the text as
// rendered (inline code without its backticks, a link's text, no HTML
// tags), lower-cased, every character but letters, digits, '-', '_' and
// spaces dropped, then each space a '-'.
func docSlug(heading string) string {
	s := docLinkText.ReplaceAllString(heading, "$1")
	s = docTag.ReplaceAllString(s, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsNumber(r), unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docAnchors are the anchors a Markdown file defines: each heading's slug
// (a repeated one with -1, -2, ... as GitHub numbers them) and each
// <a id="..."> or <a name="...">.
func docAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	for _, l := range docProse(text) {
		if m := docHeading.FindStringSubmatch(l.text); m != nil {
			base := docSlug(m[2])
			a := base
			for n := 1; anchors[a]; n++ {
				a = fmt.Sprintf("%s-%d", base, n)
			}
			anchors[a] = true
		}
		for _, m := range docHTMLID.FindAllStringSubmatch(l.text, -1) {
			anchors[m[1]] = true
		}
	}
	return anchors
}

var (
	docLinkDest = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	docRefDef   = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
)

// A docLink is a link's destination and the line it is on.
type docLink struct {
	line   int
	target string
}

// docLinks are the destinations of a file's inline links and images and
// of its link reference definitions, outside code (fenced blocks and code
// spans, which are read per paragraph: a span can run over lines).
func docLinks(text string) []docLink {
	var out []docLink
	var para []docLine
	flush := func() {
		if len(para) == 0 {
			return
		}
		var b strings.Builder
		starts := make([]int, len(para))
		for i, l := range para {
			starts[i] = b.Len()
			b.WriteString(l.text)
			b.WriteByte('\n')
		}
		s := docBlankCode(b.String())
		lineAt := func(off int) int {
			i, _ := slices.BinarySearch(starts, off+1)
			return para[i-1].n
		}
		for _, m := range docLinkDest.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, docLink{lineAt(m[0]), s[m[2]:m[3]]})
		}
		for _, m := range docRefDef.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, docLink{lineAt(m[0]), s[m[2]:m[3]]})
		}
		para = para[:0]
	}
	prev := -1
	for _, l := range docProse(text) {
		// A fence between two lines ends the paragraph too.
		if strings.TrimSpace(l.text) == "" || l.n != prev+1 {
			flush()
		}
		if strings.TrimSpace(l.text) != "" {
			para = append(para, l)
		}
		prev = l.n
	}
	flush()
	return out
}

// docBlankCode writes each code span of a paragraph as spaces (its
// newlines kept), so that offsets stay: a span opens with a run of
// backticks and closes with the next run of the same length; a run that
// none closes is text.
func docBlankCode(p string) string {
	b := []byte(p)
	run := func(i int) int {
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

var docScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// TestDocsLinks: every relative link in README.md and docs/*.md names a
// file or directory of the repository, and a #fragment on a Markdown file
// names one of its anchors.
func TestDocsLinks(t *testing.T) {
	root := docRoot(t)
	files := docFiles(t, root)
	if len(files) < 2 {
		t.Fatalf("no docs/*.md under %s", root)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(rel string) (map[string]bool, error) {
		if a, ok := anchorsOf[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		anchorsOf[rel] = docAnchors(string(b))
		return anchorsOf[rel], nil
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range docLinks(string(b)) {
			if docScheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // a URL: not this repository's to hold
			}
			checked++
			where := fmt.Sprintf("%s:%d: link %q", f, l.line, l.target)
			path, frag, _ := strings.Cut(l.target, "#")
			if p, err := url.PathUnescape(path); err == nil {
				path = p
			}
			dest := f
			if path != "" {
				if strings.HasPrefix(path, "/") {
					t.Errorf("%s: a path from the site's root; make it relative", where)
					continue
				}
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
				if dest == ".." || strings.HasPrefix(dest, "../") {
					t.Errorf("%s: leads out of the repository", where)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s: %s does not exist", where, dest)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			a, err := anchors(dest)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if !a[frag] {
				t.Errorf("%s: %s has no heading or <a id> whose anchor is #%s", where, dest, frag)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found: the link reader reads nothing")
	}
	t.Logf("%d relative links in %d files", checked, len(files))
}

// TestDocsAnchors holds docSlug and docAnchors to what GitHub makes of
// the headings these pages have.
func TestDocsAnchors(t *testing.T) {
	for heading, want := range map[string]string{
		"Report format":                                     "report-format",
		"`scan` flags":                                      "scan-flags",
		"Running a server day to day (`run`)":               "running-a-server-day-to-day-run",
		"Server state (`--state NAME`)":                     "server-state---state-name",
		"Allowed hosts (`--allow-host HOST[:PORT]`)":        "allowed-hosts---allow-host-hostport",
		"One reading of the server's words":                 "one-reading-of-the-servers-words",
		"Bulk: packages per hour":                           "bulk-packages-per-hour",
		"On many machines: shards, merge, a Kubernetes Job": "on-many-machines-shards-merge-a-kubernetes-job",
		"Sessions, the scan driver, the verdict":            "sessions-the-scan-driver-the-verdict",
		"The method: a differential with controls":          "the-method-a-differential-with-controls",
		"snake_case and **bold** [a link](x.md)":            "snake_case-and-bold-a-link",
		"Ünïcode 2.0":                                       "ünïcode-20",
	} {
		if got := docSlug(heading); got != want {
			t.Errorf("docSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := docAnchors("# T\n\n## Flags\n\n```sh\n# not a heading\n```\n\n### Flags\n\n  ```\n  ## nor this\n  ```\n\n## Flags ##\n\n<a id=\"late-effects\"></a>**Late.**\n")
	for _, want := range []string{"t", "flags", "flags-1", "flags-2", "late-effects"} {
		if !a[want] {
			t.Errorf("docAnchors: no #%s in %v", want, a)
		}
	}
	for _, not := range []string{"not-a-heading", "nor-this", "flags-3"} {
		if a[not] {
			t.Errorf("docAnchors: #%s, which is no heading", not)
		}
	}
	links := docLinks("See [a](x.md#y) and `[b](code.md)`, [c\nover lines](z.md).\n\n```\n[d](fenced.md)\n```\n\n[ref]: r.md\n")
	var got []string
	for _, l := range links {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	if want := []string{"1:x.md#y", "2:z.md", "8:r.md"}; !slices.Equal(got, want) {
		t.Errorf("docLinks = %v, want %v", got, want)
	}
}

// TestReadmeUsage: the first fenced block of README.md's "## Usage"
// section is exactly the CLI's usage text (the usage const, whole: each
// of its lines, its last newline the block's end).
func TestReadmeUsage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, "## Usage")
	if start < 0 {
		t.Fatal(`README.md has no "## Usage" heading`)
	}
	open := -1
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			open = i
			break
		}
		if strings.HasPrefix(lines[i], "#") {
			break
		}
	}
	if open < 0 {
		t.Fatal(`README.md's "## Usage" section has no fenced block`)
	}
	end := -1
	for i := open + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			end = i
			break
		}
	}
	if end < 0 {
		t.Fatal(`README.md's usage block is not closed`)
	}
	block := strings.Join(lines[open+1:end], "\n") + "\n"
	if block == usage {
		return
	}
	want := strings.Split(strings.TrimSuffix(usage, "\n"), "\n")
	got := lines[open+1 : end]
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("README.md:%d: the usage block differs from the usage const in cli.go (the README shows the CLI's text):\n README: %q\n    CLI: %q", open+2+i, g, w)
		}
	}
}

// TestReadmeSize: README.md is at most 15 KiB.
func TestReadmeSize(t *testing.T) {
	fi, err := os.Stat(filepath.Join(docRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, over %d: move the depth to a docs/ page and link it", fi.Size(), readmeMaxBytes)
	}
}

// TestUsageNamesEveryImage: the usage line of images build names each
// image the images package can build, and only those.
func TestUsageNamesEveryImage(t *testing.T) {
	i := strings.Index(usage, "images build [NAME...]")
	if i < 0 {
		t.Fatal("no images build line in the usage")
	}
	line, _, _ := strings.Cut(usage[i:], "\n")
	want := "(" + strings.Join(images.Names(), ", ") + ")"
	if !strings.HasSuffix(line, want) {
		t.Errorf("usage %q: want it to end %q", line, want)
	}
}
