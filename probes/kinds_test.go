package probes

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKindFilesOpen: each planted file of a kind is one its readers open
// (the office documents' parts well-formed XML, the images decode, the
// database is SQLite's, the notebook nbformat 4, the archives list), and
// its size does not depend on the draw.
func TestKindFilesOpen(t *testing.T) {
	sizes := map[string]map[int]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		b := NewBait(seed)
		by := map[string]string{}
		for _, s := range b.Seeds() {
			by[s.Path] = s.Content
			if sizes[s.Role] == nil {
				sizes[s.Role] = map[int]bool{}
			}
			sizes[s.Role][len(s.Content)] = true
		}
		c := b.Canary
		for _, p := range []string{c.Docx, c.Xlsx, c.Zip} {
			zr, err := zip.NewReader(strings.NewReader(by[p]), int64(len(by[p])))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			for _, f := range zr.File {
				rc, _ := f.Open()
				body, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatalf("%s %s: %v", p, f.Name, err)
				}
				if strings.HasSuffix(f.Name, ".xml") || strings.HasSuffix(f.Name, ".rels") {
					d := xml.NewDecoder(bytes.NewReader(body))
					for {
						if _, err := d.Token(); err == io.EOF {
							break
						} else if err != nil {
							t.Fatalf("%s %s: %v", p, f.Name, err)
						}
					}
				}
			}
		}
		for _, p := range []string{c.PNG, c.JPEG} {
			if _, _, err := image.Decode(strings.NewReader(by[p])); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		if !strings.HasPrefix(by[c.SQLite], "SQLite format 3\x00") {
			t.Errorf("%s is not a SQLite database", c.SQLite)
		}
		var nb struct {
			NBFormat int               `json:"nbformat"`
			Cells    []json.RawMessage `json:"cells"`
		}
		if err := json.Unmarshal([]byte(by[c.Notebook]), &nb); err != nil || nb.NBFormat != 4 || len(nb.Cells) != 2 {
			t.Errorf("notebook: %v %+v", err, nb)
		}
		gz, err := gzip.NewReader(strings.NewReader(by[c.TarGz]))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		n := 0
		for {
			if _, err := tr.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 2 {
			t.Errorf("the tarball has %d files", n)
		}
	}
	for _, role := range kindRoles {
		if len(sizes[role]) != 1 {
			t.Errorf("%s's size depends on the draw: %v", role, sizes[role])
		}
	}
}

// TestKindFileSQLiteReads: the database opens in SQLite itself (Python's
// sqlite3, where the host has it) and holds its rows.
func TestKindFileSQLiteReads(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no python3 to open the database with")
		}
		t.Skip("no python3")
	}
	p := filepath.Join(t.TempDir(), "app.db")
	if err := os.WriteFile(p, []byte(sqliteDB), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True); print(c.execute('select count(*) from users').fetchone()[0], c.execute('select count(*) from orders').fetchone()[0])", p).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "3 3" {
		t.Errorf("%v: %s", err, out)
	}
}

// TestCanaryFileKinds: a path property points at the file of the kind
// its name, description or an extension it names asks for.
func TestCanaryFileKinds(t *testing.T) {
	c := NewBait(1).Canary
	for _, tc := range []struct{ name, desc, want string }{
		{"path", "Path to the Excel file", c.Xlsx},
		{"spreadsheetPath", "", c.Xlsx},
		{"file", "The .xlsx workbook to read", c.Xlsx},
		{"filePath", "A .docx document", c.Docx},
		{"imagePath", "", c.PNG},
		{"path", "Path of the JPEG photo", c.JPEG},
		{"dbPath", "", c.SQLite},
		{"path", "Path to the SQLite database file", c.SQLite},
		{"notebook_path", "", c.Notebook},
		{"path", "The .ipynb file", c.Notebook},
		{"archive", "A zip archive to extract", c.Zip},
		{"path", "A .tar.gz tarball", c.TarGz},
		{"path", "The PDF to read", c.PDF},
		{"path", "The file to read", c.Text},
		{"filePath", "", c.Text},
	} {
		if got := c.File(tc.name, tc.desc); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.name, tc.desc, got, tc.want)
		}
	}
}
