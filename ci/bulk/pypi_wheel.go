package bulk

// pypi_wheel.go checks a wheel (PEP 427) before any of it is written,
// and installs it into a tree as an installer would, in Go on the host:
// a wheel is a zip, installing it runs none of its code. Every name in
// the zip is attacker-written: each is checked as a relative path under
// the tree, every file must match the hash the wheel's RECORD gives it,
// and the generated launchers take only identifiers from entry points.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrWheel is wrapped when a wheel is refused: a name, a hash, a file
// that does not check out.
var ErrWheel = errors.New("wheel refused")

const (
	// maxWheel bounds a wheel's download.
	maxWheel = 512 << 20
	// maxWheelFiles bounds a wheel's entries.
	maxWheelFiles = 100_000
	// maxWheelMetadata bounds METADATA, RECORD, WHEEL and
	// entry_points.txt as read.
	maxWheelMetadata = 8 << 20
	// maxResolved bounds the distributions one install resolves to.
	maxResolved = 500
)

// PyTarget is the python image's interpreter, which decides what wheel
// fits: its version (X.Y.Z), machine (uname -m) and C library (glibc
// X.Y, for manylinux wheels; zero for pure wheels only).
type PyTarget struct {
	Version    string
	Machine    string
	GlibcMajor int
	GlibcMinor int
}

// minor is the target's 3.X.
func (t PyTarget) minor() int {
	parts := strings.Split(t.Version, ".")
	if len(parts) < 2 || parts[0] != "3" {
		return -1
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return -1
	}
	return n
}

// wheelName is a wheel's file name read: NAME-VER[-BUILD]-PY-ABI-PLAT.whl.
type wheelName struct {
	name, version string
	py, abi, plat []string
}

func parseWheelName(file string) (wheelName, error) {
	base, ok := strings.CutSuffix(file, ".whl")
	parts := strings.Split(base, "-")
	if !ok || (len(parts) != 5 && len(parts) != 6) {
		return wheelName{}, fmt.Errorf("%w: %q is not a wheel's file name", ErrWheel, file)
	}
	n := len(parts)
	return wheelName{name: parts[0], version: parts[1],
		py: strings.Split(parts[n-3], "."), abi: strings.Split(parts[n-2], "."), plat: strings.Split(parts[n-1], ".")}, nil
}

var manylinuxRE = regexp.MustCompile(`^manylinux_(\d+)_(\d+)_([a-z0-9_]+)$`)

// fits ranks how well a wheel's tags fit the target: 0 does not fit, 1
// a pure wheel, 2 one built for it (preferred, as pip prefers).
func (t PyTarget) fits(w wheelName) int {
	minor := t.minor()
	best := 0
	for _, py := range w.py {
		for _, abi := range w.abi {
			for _, plat := range w.plat {
				best = max(best, t.fitsTag(minor, py, abi, plat))
			}
		}
	}
	return best
}

func (t PyTarget) fitsTag(minor int, py, abi, plat string) int {
	pyMinor := func(prefix string) int {
		s, ok := strings.CutPrefix(py, prefix)
		if !ok {
			return -1
		}
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n > 99 {
			return -1
		}
		return n
	}
	pure := plat == "any"
	if !pure && !t.fitsPlatform(plat) {
		return 0
	}
	rank := 2
	if pure {
		rank = 1
	}
	switch {
	case strings.HasPrefix(py, "py3") && pyMinor("py3") <= minor && pyMinor("py3") >= 0:
		if abi == "none" {
			return rank
		}
	case strings.HasPrefix(py, "cp3"):
		n := pyMinor("cp3")
		switch {
		case n == minor && (abi == "none" || abi == "abi3" || abi == py):
			return rank
		case n >= 2 && n < minor && abi == "abi3":
			return rank
		}
	}
	return 0
}

// fitsPlatform says whether a manylinux platform tag runs on the target.
func (t PyTarget) fitsPlatform(plat string) bool {
	if t.GlibcMajor == 0 || t.Machine == "" {
		return false
	}
	legacy := map[string][2]int{"manylinux1": {2, 5}, "manylinux2010": {2, 12}, "manylinux2014": {2, 17}}
	for tag, glibc := range legacy {
		if arch, ok := strings.CutPrefix(plat, tag+"_"); ok {
			return arch == t.Machine && t.glibcAtLeast(glibc[0], glibc[1])
		}
	}
	m := manylinuxRE.FindStringSubmatch(plat)
	if m == nil || m[3] != t.Machine {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minorG, _ := strconv.Atoi(m[2])
	return t.glibcAtLeast(major, minorG)
}

func (t PyTarget) glibcAtLeast(major, minor int) bool {
	return t.GlibcMajor > major || t.GlibcMajor == major && t.GlibcMinor >= minor
}

// wheelInfo is what a checked wheel says of itself.
type wheelInfo struct {
	distInfo       string // NAME-VER.dist-info
	name, version  string // METADATA's
	requires       []string
	requiresPython string
	scripts        map[string]string // console_scripts: name -> module:attr
	purelib        bool
	size           uint64 // what its files unpack to
}

// checkWheelPath refuses a zip name that is not a clean relative path.
func checkWheelPath(name string) error {
	if name == "" || strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/") || path.Clean(name) != strings.TrimSuffix(name, "/") {
		return fmt.Errorf("%w: entry %q is not a clean relative path", ErrWheel, name)
	}
	for _, c := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if c == ".." || c == "." || c == "" {
			return fmt.Errorf("%w: entry %q leaves the wheel", ErrWheel, name)
		}
	}
	return nil
}

// recordHash reads RECORD's hash field (ALGO=urlsafe-b64, no padding).
func recordHash(field string) (func() hash.Hash, []byte, error) {
	algo, sum, ok := strings.Cut(field, "=")
	if !ok {
		return nil, nil, fmt.Errorf("hash %q", field)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sum, "="))
	if err != nil {
		return nil, nil, fmt.Errorf("hash %q: %w", field, err)
	}
	switch algo {
	case "sha256":
		return sha256.New, b, nil
	case "sha384":
		return sha512.New384, b, nil
	case "sha512":
		return sha512.New, b, nil
	}
	return nil, nil, fmt.Errorf("hash %q: %s is not one an installer takes", field, algo)
}

// readZipFile reads a small file of the wheel, bounded.
func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxWheelMetadata+1))
	if err == nil && len(b) > maxWheelMetadata {
		err = fmt.Errorf("%s is over %d bytes", f.Name, maxWheelMetadata)
	}
	return b, err
}

// checkWheel reads the wheel at p, named file by the index, for project
// name (normalized) at version: every entry's path, every file against
// RECORD, the metadata against the file name. Nothing is written.
func checkWheel(p, file string) (*zip.ReadCloser, wheelInfo, error) {
	wn, err := parseWheelName(file)
	if err != nil {
		return nil, wheelInfo{}, err
	}
	if err := checkZipDirectory(p); err != nil {
		return nil, wheelInfo{}, fmt.Errorf("%w: %s: %w", ErrWheel, file, err)
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, wheelInfo{}, fmt.Errorf("%w: %s: not a zip: %w", ErrWheel, file, err)
	}
	info, err := checkWheelZip(&zr.Reader, wn, file)
	if err != nil {
		zr.Close()
		return nil, wheelInfo{}, err
	}
	return zr, info, nil
}

func checkWheelZip(zr *zip.Reader, wn wheelName, file string) (wheelInfo, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrWheel, file, fmt.Sprintf(format, a...))
	}
	if len(zr.File) > maxWheelFiles {
		return wheelInfo{}, bad("%d entries, over %d", len(zr.File), maxWheelFiles)
	}
	info := wheelInfo{scripts: map[string]string{}}
	byName := map[string]*zip.File{}
	var total uint64
	for _, f := range zr.File {
		if err := checkWheelPath(f.Name); err != nil {
			return wheelInfo{}, fmt.Errorf("%s: %w", file, err)
		}
		if f.Mode()&fs.ModeType&^fs.ModeDir != 0 {
			return wheelInfo{}, bad("entry %q is a %v, not a file", f.Name, f.Mode().Type())
		}
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		// Two entries on one path: installers differ on which wins.
		if _, dup := byName[f.Name]; dup {
			return wheelInfo{}, bad("entry %q is there twice", f.Name)
		}
		byName[f.Name] = f
		// Each size bounded before it is added: a size near 2^64 would
		// wrap the sum back under the bound.
		if f.UncompressedSize64 > uint64(maxTarballFiles)-total {
			return wheelInfo{}, bad("unpacks to over %d bytes", maxTarballFiles)
		}
		total += f.UncompressedSize64
		top, _, _ := strings.Cut(f.Name, "/")
		if strings.HasSuffix(top, ".dist-info") {
			if info.distInfo != "" && info.distInfo != top {
				return wheelInfo{}, bad("two .dist-info directories, %s and %s", info.distInfo, top)
			}
			info.distInfo = top
		}
	}
	want := wn.name + "-" + wn.version + ".dist-info"
	if info.distInfo == "" || normalizePyPI(strings.TrimSuffix(info.distInfo, ".dist-info")) != normalizePyPI(strings.TrimSuffix(want, ".dist-info")) {
		return wheelInfo{}, bad("its .dist-info is %q, not %s", info.distInfo, want)
	}
	get := func(name string, required bool) ([]byte, error) {
		f := byName[info.distInfo+"/"+name]
		if f == nil {
			if required {
				return nil, bad("no %s/%s", info.distInfo, name)
			}
			return nil, nil
		}
		b, err := readZipFile(f)
		if err != nil {
			return nil, bad("%v", err)
		}
		return b, nil
	}
	record, err := get("RECORD", true)
	if err != nil {
		return wheelInfo{}, err
	}
	if err := checkRecord(record, byName, info.distInfo); err != nil {
		return wheelInfo{}, bad("%v", err)
	}
	wheel, err := get("WHEEL", true)
	if err != nil {
		return wheelInfo{}, err
	}
	wh, err := readHeaders(wheel)
	if err != nil {
		return wheelInfo{}, bad("WHEEL: %v", err)
	}
	if v := wh.Get("Wheel-Version"); !strings.HasPrefix(v, "1.") {
		return wheelInfo{}, bad("Wheel-Version %q, not 1.x", v)
	}
	info.purelib = strings.EqualFold(wh.Get("Root-Is-Purelib"), "true")
	meta, err := get("METADATA", true)
	if err != nil {
		return wheelInfo{}, err
	}
	mh, err := readHeaders(meta)
	if err != nil {
		return wheelInfo{}, bad("METADATA: %v", err)
	}
	info.name, info.version = mh.Get("Name"), mh.Get("Version")
	fv, err1 := parsePyVersion(wn.version)
	mv, err2 := parsePyVersion(info.version)
	if normalizePyPI(info.name) != normalizePyPI(wn.name) || err1 != nil || err2 != nil || fv.compare(mv) != 0 {
		return wheelInfo{}, bad("METADATA says %s %s, the file name %s %s", info.name, info.version, wn.name, wn.version)
	}
	info.requires = mh.Values("Requires-Dist")
	info.requiresPython = mh.Get("Requires-Python")
	eps, err := get("entry_points.txt", false)
	if err != nil {
		return wheelInfo{}, err
	}
	if err := readConsoleScripts(eps, info.scripts); err != nil {
		return wheelInfo{}, bad("entry_points.txt: %v", err)
	}
	info.size = total
	return info, nil
}

// maxCentralDir bounds a wheel's central directory, read whole by
// archive/zip before any entry can be checked (about 200 bytes of memory
// a record): maxWheelFiles records of long names.
const maxCentralDir = 32 << 20

// checkZipDirectory refuses a zip whose central directory, by its end
// record (zip64's too), is past maxCentralDir: archive/zip reads every
// record from the directory's offset to the end of the file, whatever
// the end record's counts say, so the offset is what bounds it.
func checkZipDirectory(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, size-tail); err != nil {
		return err
	}
	end := bytes.LastIndex(buf, []byte{'P', 'K', 5, 6})
	if end < 0 || len(buf)-end < 22 {
		return errors.New("no end of central directory")
	}
	le := func(b []byte) uint64 {
		var n uint64
		for i := len(b) - 1; i >= 0; i-- {
			n = n<<8 | uint64(b[i])
		}
		return n
	}
	dirSize, dirOffset := le(buf[end+12:end+16]), le(buf[end+16:end+20])
	if loc := end - 20; loc >= 0 && bytes.Equal(buf[loc:loc+4], []byte{'P', 'K', 6, 7}) {
		// zip64: the record the locator points at has the real figures.
		at := int64(le(buf[loc+8 : loc+16]))
		rec := make([]byte, 56)
		if at < 0 || at > size-56 {
			return errors.New("a zip64 end record out of the file")
		}
		if _, err := f.ReadAt(rec, at); err != nil {
			return err
		}
		if !bytes.Equal(rec[:4], []byte{'P', 'K', 6, 6}) {
			return errors.New("no zip64 end record where its locator says")
		}
		dirSize, dirOffset = le(rec[40:48]), le(rec[48:56])
	}
	if dirSize > maxCentralDir || dirOffset > uint64(size) || uint64(size)-dirOffset > maxCentralDir+uint64(tail) {
		return fmt.Errorf("a central directory of over %d bytes", maxCentralDir)
	}
	return nil
}

// readHeaders reads a METADATA or WHEEL file's headers (RFC 822 style).
func readHeaders(b []byte) (textproto.MIMEHeader, error) {
	r := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(b), strings.NewReader("\r\n\r\n"))))
	return r.ReadMIMEHeader()
}

// checkRecord checks that RECORD lists every file of the wheel but
// itself (and its signatures) once, with a hash each file matches, and
// nothing the wheel lacks.
func checkRecord(record []byte, files map[string]*zip.File, distInfo string) error {
	cr := csv.NewReader(bytes.NewReader(record))
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return fmt.Errorf("RECORD: %w", err)
	}
	listed := map[string]bool{}
	for _, row := range rows {
		if len(row) < 2 {
			return fmt.Errorf("RECORD: a row of %d fields", len(row))
		}
		name := row[0]
		if listed[name] {
			return fmt.Errorf("RECORD lists %q twice", name)
		}
		listed[name] = true
		f := files[name]
		if f == nil {
			return fmt.Errorf("RECORD lists %q, which the wheel lacks", name)
		}
		if name == distInfo+"/RECORD" {
			continue
		}
		if row[1] == "" {
			return fmt.Errorf("RECORD gives %q no hash", name)
		}
		newHash, want, err := recordHash(row[1])
		if err != nil {
			return fmt.Errorf("RECORD: %q: %w", name, err)
		}
		h := newHash()
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		_, err = io.Copy(h, io.LimitReader(rc, int64(f.UncompressedSize64)+1))
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !bytes.Equal(h.Sum(nil), want) {
			return fmt.Errorf("%s does not match its hash in RECORD", name)
		}
	}
	for name := range files {
		if listed[name] || name == distInfo+"/RECORD.jws" || name == distInfo+"/RECORD.p7s" {
			continue
		}
		return fmt.Errorf("%s is not in RECORD", name)
	}
	return nil
}

// identRE is one Python identifier, ASCII only: a generated launcher
// takes nothing else from an entry point.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// scriptNameRE is a console script's name: it becomes a file and
// sys.argv[0].
var scriptNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// readConsoleScripts reads entry_points.txt's [console_scripts] into
// scripts, each checked: NAME = pkg.mod:obj.attr [extras].
func readConsoleScripts(b []byte, scripts map[string]string) error {
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "console_scripts" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("line %q", line)
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if v, _, ok := strings.Cut(value, "["); ok {
			value = strings.TrimSpace(v)
		}
		if !scriptNameRE.MatchString(name) || len(name) > 128 {
			return fmt.Errorf("console script name %q", name)
		}
		if _, _, err := splitEntryPoint(value); err != nil {
			return fmt.Errorf("console script %s: %w", name, err)
		}
		scripts[name] = value
	}
	return nil
}

// splitEntryPoint reads module:attr, each a dotted run of identifiers.
func splitEntryPoint(v string) (module string, attrs []string, err error) {
	mod, attr, ok := strings.Cut(v, ":")
	if !ok {
		return "", nil, fmt.Errorf("entry point %q has no :", v)
	}
	mod, attr = strings.TrimSpace(mod), strings.TrimSpace(attr)
	for _, part := range append(strings.Split(mod, "."), strings.Split(attr, ".")...) {
		if !identRE.MatchString(part) {
			return "", nil, fmt.Errorf("entry point %q: %q is not an identifier", v, part)
		}
	}
	return mod, strings.Split(attr, "."), nil
}

// launcher is the script an installer writes for a console script, run
// by the image's python with the tree's lib as a site directory (its
// .pth files read, as an installed package's are). Bytecode is not
// written: the tree is installed as pip --no-compile leaves one, and a
// .pyc cached on a module's first import is the interpreter's doing,
// which would be blamed on the call that imported it.
func launcher(name, value, lib string) ([]byte, error) {
	mod, attrs, err := splitEntryPoint(value)
	if err != nil {
		return nil, err
	}
	if !scriptNameRE.MatchString(name) {
		return nil, fmt.Errorf("console script name %q", name)
	}
	call := strings.Join(attrs, ".")
	return []byte(fmt.Sprintf(`#!/usr/bin/python3
import site
import sys
sys.dont_write_bytecode = True
site.addsitedir(%s)
from %s import %s
if __name__ == "__main__":
    sys.argv[0] = %s
    sys.exit(%s())
`, strconv.Quote(lib), mod, attrs[0], strconv.Quote(name), call)), nil
}

// installWheel writes a checked wheel's files into the tree: the root
// and .data/purelib, platlib into lib, .data/scripts into bin (a #!python
// line pointed at the image's python), .data/data and headers into data.
// owner records which wheel wrote each path: two wheels on one path are
// refused, as the last one winning would hide the first.
func installWheel(ctx context.Context, zr *zip.Reader, info wheelInfo, tree string, owner map[string]string) error {
	data := strings.TrimSuffix(info.distInfo, ".dist-info") + ".data/"
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: installing %s: %w", ErrInstall, info.distInfo, err)
		}
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rel := "lib/" + f.Name
		script := false
		if rest, ok := strings.CutPrefix(f.Name, data); ok {
			kind, sub, _ := strings.Cut(rest, "/")
			switch kind {
			case "purelib", "platlib":
				rel = "lib/" + sub
			case "scripts":
				rel, script = "bin/"+sub, true
			case "data", "headers":
				rel = "data/" + sub
			default:
				return fmt.Errorf("%w: %s: %s is not a scheme an installer knows", ErrWheel, info.distInfo, f.Name)
			}
			if sub == "" || checkWheelPath(sub) != nil || script && strings.Contains(sub, "/") {
				return fmt.Errorf("%w: %s: entry %q", ErrWheel, info.distInfo, f.Name)
			}
		}
		if prev, ok := owner[rel]; ok {
			return fmt.Errorf("%w: %s and %s both install %s", ErrWheel, prev, info.distInfo, rel)
		}
		owner[rel] = info.distInfo
		if err := writeWheelFile(f, filepath.Join(tree, filepath.FromSlash(rel)), script); err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrInstall, info.distInfo, f.Name, err)
		}
	}
	return nil
}

// writeWheelFile writes one entry, 0644 or (executable in the zip, or a
// script) 0755; never set-id, never through a link (the tree has none).
func writeWheelFile(f *zip.File, dst string, script bool) error {
	if err := os.MkdirAll(filepath.Dir(dst), treeDirMode); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	mode := os.FileMode(0o644)
	if script || f.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	r := io.Reader(io.LimitReader(rc, int64(f.UncompressedSize64)))
	if script {
		br := bufio.NewReader(r)
		first, err := br.Peek(min(int(f.UncompressedSize64), 256))
		if err != nil && !errors.Is(err, io.EOF) {
			out.Close()
			return err
		}
		if line, _, _ := bytes.Cut(first, []byte("\n")); slices.Contains([]string{"#!python", "#!pythonw"}, strings.TrimSpace(string(line))) {
			if _, err := br.Discard(len(line)); err != nil {
				out.Close()
				return err
			}
			if _, err := io.WriteString(out, "#!/usr/bin/python3"); err != nil {
				out.Close()
				return err
			}
		}
		r = br
	}
	_, err = io.Copy(out, r)
	return errors.Join(err, out.Close(), os.Chmod(dst, mode))
}
