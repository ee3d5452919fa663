package bulk

// install_tarball.go installs a local npm tarball (tgz:PATH): a package
// packed with npm pack and never published. Its content goes into the
// content-addressed cache under its own sha512 integrity, and it is
// installed as a registry package is, scripts off on the host; its
// dependencies come from the registry, checked the same way.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// tarballPrefix is the list prefix of a local npm tarball.
const tarballPrefix = "tgz"

// parseTarballLine reads tgz:PATH's line: the path made absolute (from
// the working directory), the options as an npm line's.
func parseTarballLine(path string, opts []string, args string) (Spec, error) {
	if path == "" {
		return Spec{}, fmt.Errorf("%q: want tgz:PATH", tarballPrefix+":")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Spec{}, fmt.Errorf("tgz:%s: %w", path, err)
	}
	return withOptions(Spec{Kind: KindNPM, Name: abs, Tarball: true}, opts, args)
}

// cacheTarball copies a local tarball into the cache under its sha512
// integrity and returns the cached path. want is the sum of the content
// read and checked before: a file that changed since is refused.
func (n NPM) cacheTarball(path string, want []byte) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	final, err := cachePath(n.Cache, tarballsDir, "sha512-"+hex.EncodeToString(want)+".tgz")
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".local-*.tgz")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	h := sha512.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), f)
	if err == nil {
		// Synced before the rename: a crash must not leave an empty file
		// under the name of a hash it does not have. (Its name comes from
		// the content, so renameio, which needs the name first, does not
		// fit: one read hashes and copies, so the two cannot differ.)
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, want) {
		return "", errors.New("the tarball changed while it was read: refused")
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

const (
	// maxTarballManifest bounds the package.json read out of a tarball.
	maxTarballManifest = 1 << 20
	// maxTarballFiles bounds what a tarball unpacks to on the host: a
	// few kilobytes of gzip can say terabytes.
	maxTarballFiles int64 = 2 << 30
	// maxTarDepth is node-tar's bound on an entry's path components: it
	// skips a deeper entry.
	maxTarDepth = 1024
	// tarPackageDir is the directory npm pack puts a package under.
	tarPackageDir = "package/"
)

// readPackage reads an npm tarball as npm's extraction lays it out
// (pacote over node-tar: the first path component dropped, whatever its
// name; leading slashes stripped; files only, no directory or link) and
// returns its one package.json. Two entries that land on one path are
// refused: npm keeps the last, a reader taking the first would check
// another manifest than npm installs. With w, the files are written to w
// as a tarball of their own (names cleaned, under package/; set-id, sticky
// and world-writable bits dropped), which is what npm is given: whatever
// Go's and node-tar's readers would disagree on in the original (extended
// headers, odd types, paths), npm installs what was read here.
func readPackage(r io.Reader, w io.Writer) (Manifest, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return Manifest{}, fmt.Errorf("not a gzip tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	var zw *gzip.Writer
	var tw *tar.Writer
	if w != nil {
		// Read once by npm and removed: speed over size.
		zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
		tw = tar.NewWriter(zw)
	}
	seen, dirs := map[string]string{}, map[string]string{} // extracted paths: the entry's name
	var manifest []byte
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("reading the tarball: %w", err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeCont {
			continue // pacote extracts files only: directories come with them
		}
		p, err := extractedPath(h.Name)
		if err != nil {
			return Manifest{}, err
		}
		if p == "" {
			continue // node-tar writes it nowhere
		}
		if prev, ok := seen[p]; ok {
			return Manifest{}, fmt.Errorf("%w: entries %q and %q are both extracted to %s (npm keeps the last): refused", ErrAmbiguousTarball, prev, h.Name, p)
		}
		if prev, ok := dirs[p]; ok {
			return Manifest{}, fmt.Errorf("%w: entry %q is a file where %q needs a directory: refused", ErrAmbiguousTarball, h.Name, prev)
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if prev, ok := seen[d]; ok {
				return Manifest{}, fmt.Errorf("%w: entry %q needs a directory where %q is a file: refused", ErrAmbiguousTarball, h.Name, prev)
			}
			dirs[d] = h.Name
		}
		seen[p] = h.Name
		if total += h.Size; total > maxTarballFiles {
			return Manifest{}, fmt.Errorf("the tarball unpacks to over %d bytes: refused", maxTarballFiles)
		}
		var body io.Reader = tr
		if p == "package.json" || bundledManifest(p) {
			b, err := io.ReadAll(io.LimitReader(tr, maxTarballManifest+1))
			if err != nil {
				return Manifest{}, fmt.Errorf("reading the tarball: %w", err)
			}
			if len(b) > maxTarballManifest {
				return Manifest{}, fmt.Errorf("%s over %d bytes", p, maxTarballManifest)
			}
			body = bytes.NewReader(b)
			if p == "package.json" {
				manifest = b
			} else if err := checkBundled(p, b); err != nil {
				return Manifest{}, err
			}
		}
		if tw == nil {
			continue
		}
		// Permission bits only, as npm's extraction keeps them, less the
		// unsafe ones; the time is npm's to set (it ignores the tarball's).
		mode := int64(fs.FileMode(h.Mode) & fs.ModePerm &^ unsafeModeBits)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: tarPackageDir + p, Mode: mode, Size: h.Size, ModTime: time.Unix(0, 0)}); err != nil {
			return Manifest{}, fmt.Errorf("writing the tarball: %w", err)
		}
		if _, err := io.Copy(tw, body); err != nil {
			return Manifest{}, fmt.Errorf("writing the tarball: %w", err)
		}
	}
	if manifest == nil {
		return Manifest{}, errors.New("no package/package.json in the tarball")
	}
	m, err := parseManifest(manifest)
	if err != nil {
		return Manifest{}, err
	}
	if tw != nil {
		if err := tw.Close(); err != nil {
			return Manifest{}, fmt.Errorf("writing the tarball: %w", err)
		}
		if err := zw.Close(); err != nil {
			return Manifest{}, fmt.Errorf("writing the tarball: %w", err)
		}
	}
	return m, nil
}

// bundledManifest says whether p is the package.json of a package the
// tarball bundles (node_modules/NAME/ or node_modules/@SCOPE/NAME/, at
// any depth): npm installs what such a package depends on and lacks.
func bundledManifest(p string) bool {
	dir, file := path.Split(p)
	if file != "package.json" {
		return false
	}
	parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	n := len(parts)
	return n >= 2 && parts[n-2] == "node_modules" || n >= 3 && parts[n-3] == "node_modules" && strings.HasPrefix(parts[n-2], "@")
}

// checkBundled refuses a bundled package whose dependencies are not the
// registry's, as the package's own are. Only those fields are read: an
// old package's other fields may be of any shape.
func checkBundled(p string, b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimPrefix(b, []byte(byteOrderMark)), &raw); err != nil {
		return fmt.Errorf("bundled %s: %w", p, err)
	}
	m := Manifest{Overrides: raw["overrides"]}
	for _, f := range []struct {
		key  string
		into *map[string]string
	}{{"dependencies", &m.Dependencies}, {"optionalDependencies", &m.OptionalDependencies}, {"peerDependencies", &m.PeerDependencies}} {
		if v, ok := raw[f.key]; ok {
			if err := json.Unmarshal(v, f.into); err != nil {
				return fmt.Errorf("bundled %s: %s: %w", p, f.key, err)
			}
		}
	}
	if err := refuseDeps(m); err != nil {
		return fmt.Errorf("bundled %s: %w", p, err)
	}
	return nil
}

// readPackageFile is readPackage of the tarball at src, writing its own
// tarball at out ("" for none).
func readPackageFile(src, out string) (Manifest, error) {
	f, err := os.Open(src)
	if err != nil {
		return Manifest{}, err
	}
	defer f.Close()
	if out == "" {
		return readPackage(f, nil)
	}
	o, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Manifest{}, err
	}
	m, err := readPackage(f, o)
	if cerr := o.Close(); err == nil && cerr != nil {
		return Manifest{}, fmt.Errorf("writing the tarball: %w", cerr)
	}
	return m, err
}

// extractedPath is where npm's extraction writes a tar entry, relative to
// the package's directory: node-tar drops the first path component
// ("package/" or any other), strips leading slashes, and resolves the
// rest ("a//b", "a/./b" are "a/b"). "" for an entry it writes nowhere
// (one at the top level). A path it refuses (..), reads as Windows'
// (a backslash, a drive: it strips "C:" on every platform) or would
// rename (not UTF-8) is refused.
func extractedPath(name string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: entry %q %s: refused", ErrAmbiguousTarball, name, why)
	}
	if !utf8.ValidString(name) {
		return "", bad("is not UTF-8 (npm would rename it)")
	}
	if strings.Contains(name, `\`) {
		return "", bad(`has a \, a separator to npm on Windows`)
	}
	_, rest, ok := strings.Cut(name, "/")
	if !ok {
		return "", nil
	}
	rest = strings.TrimLeft(rest, "/")
	parts := strings.Split(rest, "/")
	if len(parts) > maxTarDepth {
		return "", bad(fmt.Sprintf("is over %d components deep (npm skips it)", maxTarDepth))
	}
	if slices.Contains(parts, "..") {
		return "", bad("has a .. (npm skips it)")
	}
	p := path.Clean(rest)
	if p == "." {
		return "", nil
	}
	if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return "", bad("starts with a drive letter (npm strips it)")
	}
	return p, nil
}

// resolveTarball is a local tarball's resolution: its name and version
// from its package.json, its integrity from its content. Name, version
// and dependencies are checked before anything is written; then it is
// cached.
func (n NPM) resolveTarball(ctx context.Context, s Spec) (Resolved, string, error) {
	if err := ctx.Err(); err != nil {
		return Resolved{}, "", err
	}
	m, sum, err := readLocalTarball(s.Name)
	if err != nil {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: %w", ErrFetch, s.Name, err)
	}
	for _, err := range []error{checkNPMName(m.Name), checkNPMVersion(m.Version)} {
		if err != nil {
			return Resolved{}, "", fmt.Errorf("%w: tgz:%s: package.json: %w", ErrFetch, s.Name, err)
		}
	}
	if err := refuseDeps(m); err != nil {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: %s@%s: %w", ErrFetch, s.Name, m.Name, m.Version, err)
	}
	cached, err := n.cacheTarball(s.Name, sum)
	if err != nil {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: %w", ErrFetch, s.Name, err)
	}
	var r Resolved
	r.Manifest = m
	r.Dist.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum)
	return r, cached, nil
}

// readLocalTarball reads a local tarball's manifest (readPackage) and
// its sha512, in one read.
func readLocalTarball(src string) (Manifest, []byte, error) {
	f, err := os.Open(src)
	if err != nil {
		return Manifest{}, nil, err
	}
	defer f.Close()
	h := sha512.New()
	tee := io.TeeReader(f, h)
	m, err := readPackage(tee, nil)
	if err != nil {
		return Manifest{}, nil, err
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return Manifest{}, nil, err
	}
	return m, h.Sum(nil), nil
}
