package bulk

// install_tarball.go installs a local npm tarball (tgz:PATH): a package
// packed with npm pack and never published. Its content goes into the
// content-addressed cache under its own sha512 integrity, and it is
// installed as a registry package is, scripts off on the host; its
// dependencies come from the registry, checked the same way.

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tarballPrefix is the list prefix of a local npm tarball.
const tarballPrefix = "tgz"

// maxTarballManifest bounds the package.json read out of a tarball.
const maxTarballManifest = 1 << 20

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
// integrity and returns the cached path and the integrity.
func (n NPM) cacheTarball(path string) (string, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	dir := filepath.Join(n.Cache, "tarballs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	tmp, err := os.CreateTemp(dir, ".local-*.tgz")
	if err != nil {
		return "", "", err
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
		return "", "", err
	}
	sum := h.Sum(nil)
	final := filepath.Join(dir, "sha512-"+hex.EncodeToString(sum)+".tgz")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", "", err
	}
	return final, "sha512-" + base64.StdEncoding.EncodeToString(sum), nil
}

// tarballManifest reads package/package.json out of an npm tarball.
func tarballManifest(path string) (Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return Manifest{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return Manifest{}, fmt.Errorf("not a gzip tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return Manifest{}, errors.New("no package/package.json in the tarball")
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("reading the tarball: %w", err)
		}
		// npm pack puts everything under package/; npm takes the first
		// directory, whatever its name, as the package's.
		_, rest, _ := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		if rest != "package.json" || h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxTarballManifest+1))
		if err != nil {
			return Manifest{}, err
		}
		if len(b) > maxTarballManifest {
			return Manifest{}, fmt.Errorf("package.json over %d bytes", maxTarballManifest)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return Manifest{}, fmt.Errorf("package.json: %w", err)
		}
		return m, nil
	}
}

// resolveTarball is a local tarball's resolution: its name and version
// from its package.json, its integrity from its content, cached.
func (n NPM) resolveTarball(ctx context.Context, s Spec) (Resolved, string, error) {
	if err := ctx.Err(); err != nil {
		return Resolved{}, "", err
	}
	cached, integrity, err := n.cacheTarball(s.Name)
	if err != nil {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: %w", ErrFetch, s.Name, err)
	}
	m, err := tarballManifest(cached)
	if err != nil {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: %w", ErrFetch, s.Name, err)
	}
	if !validNPMName(m.Name) || m.Version == "" {
		return Resolved{}, "", fmt.Errorf("%w: tgz:%s: package.json names %q version %q: want an npm name and a version", ErrFetch, s.Name, m.Name, m.Version)
	}
	var r Resolved
	r.Manifest = m
	r.Dist.Integrity = integrity
	return r, cached, nil
}
