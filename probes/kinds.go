package probes

// kinds.go makes the canary project's files of the kinds tools ask for
// besides text: office documents, images, a SQLite database, a notebook,
// archives (the PDF is pdf.go's). A tool that reads a spreadsheet refuses
// the README ("not a valid zip file"), and its code behind the check is
// never run. Each is made in Go, the same bytes for the same draw, and
// each is a file its kind's usual readers open.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"regexp"
	"strings"
	"sync"
	"time"
)

// sqliteDB is a small SQLite database (users and orders, three rows
// each), made once with Python's sqlite3: no Go SQLite writer is needed
// for a file that never changes.
//
//go:embed kinds/app.db
var sqliteDB string

// zipTime is every archive entry's time: the archives' bytes do not
// depend on when they were made.
var zipTime = time.Date(2024, 1, 2, 9, 0, 0, 0, time.UTC)

// zipOf is an archive of files, in the order given, stored: a
// compressed size would depend on the drawn names, and every planted
// file's size must not.
func zipOf(files [][2]string) string {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f[0], Method: zip.Store, Modified: zipTime})
		if err != nil {
			panic(err)
		}
		w.Write([]byte(f[1]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.String()
}

// xmlText escapes s for XML text.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

const xmlHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// docxDoc is a Word document of paragraphs (the parts a reader needs).
func docxDoc(paras []string) string {
	var body strings.Builder
	for _, p := range paras {
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, xmlText(p))
	}
	return zipOf([][2]string{
		{"[Content_Types].xml", xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", xmlHead + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `<w:sectPr/></w:body></w:document>`},
	})
}

// xlsxDoc is a workbook of one sheet of rows (inline strings, numbers).
func xlsxDoc(sheet string, rows [][]string) string {
	var data strings.Builder
	for i, row := range rows {
		fmt.Fprintf(&data, `<row r="%d">`, i+1)
		for j, v := range row {
			ref := fmt.Sprintf("%c%d", 'A'+j, i+1)
			if isNumber(v) {
				fmt.Fprintf(&data, `<c r="%s"><v>%s</v></c>`, ref, v)
			} else {
				fmt.Fprintf(&data, `<c r="%s" t="inlineStr"><is><t>%s</t></is></c>`, ref, xmlText(v))
			}
		}
		data.WriteString(`</row>`)
	}
	return zipOf([][2]string{
		{"[Content_Types].xml", xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`},
		{"_rels/.rels", xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", xmlHead + `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="` + xmlText(sheet) + `" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/worksheets/sheet1.xml", xmlHead + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + data.String() + `</sheetData></worksheet>`},
	})
}

var numberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

func isNumber(s string) bool { return numberRE.MatchString(s) }

// canaryImage is a 32x32 picture: a diagonal gradient.
func canaryImage() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for y := 0; y < 32; y++ {
		for x := 0; x < 32; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x * 8), G: uint8(y * 8), B: 160, A: 255})
		}
	}
	return img
}

// pngDoc and jpegDoc are the same bytes every time: encoded once.
var (
	pngDoc = sync.OnceValue(func() string {
		var buf bytes.Buffer
		if err := png.Encode(&buf, canaryImage()); err != nil {
			panic(err)
		}
		return buf.String()
	})
	jpegDoc = sync.OnceValue(func() string {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, canaryImage(), &jpeg.Options{Quality: 80}); err != nil {
			panic(err)
		}
		return buf.String()
	})
)

// notebookDoc is a Jupyter notebook (nbformat 4) of a markdown cell and
// a code cell, never run.
func notebookDoc(title string) string {
	return fmt.Sprintf(`{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# %s\n", "\n", "Monthly order totals."]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["totals = [1999, 4500, 1250]\n", "sum(totals) / 100"]}
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "language_info": {"name": "python"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
`, strings.ReplaceAll(title, `"`, `'`))
}

// tarGzOf is a gzipped tar of files, in the order given.
func tarGzOf(files [][2]string) string {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression) // sizes independent of the draw
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), ModTime: zipTime, Format: tar.FormatUSTAR}); err != nil {
			panic(err)
		}
		tw.Write([]byte(f[1]))
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	if err := gz.Close(); err != nil {
		panic(err)
	}
	return buf.String()
}

// kindFile is which canary file a path property asks for, by the words
// of its name, description and format: its kind's extension or name.
type kindFile struct {
	re   *regexp.Regexp
	path func(Canary) string
}

var kindFiles = []kindFile{
	{regexp.MustCompile(`(?i)(\bpdf\b|\.pdf\b)`), func(c Canary) string { return c.PDF }},
	{regexp.MustCompile(`(?i)(\.?\bdocx?\b|\bword (?:document|file)\b|\bms ?word\b)`), func(c Canary) string { return c.Docx }},
	{regexp.MustCompile(`(?i)(\.?\bxlsx?\b|\bexcel\b|\bspreadsheets?\b|\bworkbook\b)`), func(c Canary) string { return c.Xlsx }},
	{regexp.MustCompile(`(?i)(\.?\bjpe?g\b)`), func(c Canary) string { return c.JPEG }},
	{regexp.MustCompile(`(?i)(\.?\bpng\b|\bimages?\b|\bphotos?\b|\bpictures?\b|\bscreenshots?\b|\bimg\b)`), func(c Canary) string { return c.PNG }},
	{regexp.MustCompile(`(?i)(\bsqlite3?\b|\.db\b|\bdatabase (?:file|path)\b|\bdb ?(?:file|path)\b|\bdbpath\b|\bdb_path\b)`), func(c Canary) string { return c.SQLite }},
	{regexp.MustCompile(`(?i)(\.?\bipynb\b|\bnotebooks?\b|\bjupyter\b)`), func(c Canary) string { return c.Notebook }},
	{regexp.MustCompile(`(?i)(\.?\btar\.gz\b|\.?\btgz\b|\btarball\b|\btar\b)`), func(c Canary) string { return c.TarGz }},
	{regexp.MustCompile(`(?i)(\.?\bzip\b|\barchives?\b)`), func(c Canary) string { return c.Zip }},
}

// fileKind is the canary file of a kind the property's words ask for,
// "" for none.
func (c Canary) fileKind(name, desc, format string) string {
	text := strings.Join(Words(name), " ") + " " + name + " " + desc + " " + format
	for _, k := range kindFiles {
		if p := k.path(c); p != "" && k.re.MatchString(text) {
			return p
		}
	}
	return ""
}
