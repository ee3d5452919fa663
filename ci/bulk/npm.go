package bulk

// npm.go fetches and installs npm packages on the host with scripts off.
// It started as a copy of ci/corpus's Install, improved (content-addressed
// cache, pinning with integrity, refused git and URL dependencies,
// engines checked, a prefix whose name cannot equal the package's); the
// two should be merged once corpus moves to bulk.

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Resolved is a version the registry resolved a spec to.
type Resolved struct {
	Manifest
	Dist struct {
		// Integrity is the tarball's SRI hash (sha512-BASE64; sha1 for old
		// packages).
		Integrity string `json:"integrity"`
		Shasum    string `json:"shasum"`
		Tarball   string `json:"tarball"`
	} `json:"dist"`
}

// NPMRegistry resolves and downloads npm packages; NPMCLI is npm's.
type NPMRegistry interface {
	// View resolves NAME@SPEC to one version.
	View(ctx context.Context, name, spec string) (Resolved, error)
	// Pack downloads NAME@VERSION's tarball into dir and returns its path.
	Pack(ctx context.Context, name, version, dir string) (string, error)
}

// NPMCLI is the npm command line: npm view and npm pack, which run no
// package code.
type NPMCLI struct {
	// Cache is npm's own cache (--cache), "" for npm's default.
	Cache string
}

func (c NPMCLI) npm(ctx context.Context, dir string, args ...string) ([]byte, error) {
	if c.Cache != "" {
		args = append(args, "--cache", c.Cache)
	}
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("npm %s: %w: %s", strings.Join(args, " "), err, npmErrors(stderr.String()))
	}
	return out, nil
}

// View implements NPMRegistry: the highest version a range matches.
func (c NPMCLI) View(ctx context.Context, name, spec string) (Resolved, error) {
	out, err := c.npm(ctx, "", "view", "--json", name+"@"+spec)
	if err != nil {
		return Resolved{}, err
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return Resolved{}, fmt.Errorf("npm view %s@%s: no version matches", name, spec)
	}
	if out[0] == '[' {
		var all []Resolved
		if err := json.Unmarshal(out, &all); err != nil {
			return Resolved{}, fmt.Errorf("npm view %s@%s: %w", name, spec, err)
		}
		if len(all) == 0 {
			return Resolved{}, fmt.Errorf("npm view %s@%s: no version matches", name, spec)
		}
		return all[len(all)-1], nil // npm lists them in ascending order
	}
	var r Resolved
	if err := json.Unmarshal(out, &r); err != nil {
		return Resolved{}, fmt.Errorf("npm view %s@%s: %w", name, spec, err)
	}
	return r, nil
}

// Pack implements NPMRegistry.
func (c NPMCLI) Pack(ctx context.Context, name, version, dir string) (string, error) {
	out, err := c.npm(ctx, dir, "pack", "--json", "--ignore-scripts", "--pack-destination", dir, name+"@"+version)
	if err != nil {
		return "", err
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		return "", fmt.Errorf("npm pack %s@%s: unexpected output %.200q", name, version, out)
	}
	return filepath.Join(dir, filepath.Base(packed[0].Filename)), nil
}

// NPM installs npm specs on the host with scripts off into a
// content-addressed cache: tarballs by integrity, installed trees by
// name, version and integrity.
type NPM struct {
	// Cache is the cache directory.
	Cache string
	// Registry resolves and downloads (NPMCLI when nil).
	Registry NPMRegistry
	// Node is the image's node version (X.Y.Z), for engines; "" skips the
	// check.
	Node string
	// Scripts runs the lifecycle scripts of a tree whose lockfile marks
	// any, in a sandbox; nil leaves them unrun (a note says so).
	Scripts ScriptRunner
	// RegistryURL is where registry dependencies resolve to
	// (https://registry.npmjs.org/ when empty); a dependency resolved
	// elsewhere is refused.
	RegistryURL string
}

// defaultRegistryURL is npm's registry.
const defaultRegistryURL = "https://registry.npmjs.org/"

// installedMarker is written last in an installed tree: a tree without it
// is unfinished and installed again.
const installedMarker = ".mcpsandbox-installed.json"

// installPackageName names the install prefix's own package.json: npm
// installs nothing when the prefix's name equals the package's.
const installPackageName = "mcpsandbox-bulk-install"

// Install implements Installer.
func (n NPM) Install(ctx context.Context, s Spec) (Installed, error) {
	if s.Tarball {
		r, tarball, err := n.resolveTarball(ctx, s)
		if err != nil {
			return Installed{}, err
		}
		if err := refuseDeps(r.Manifest); err != nil {
			return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrFetch, r.Name, r.Version, err)
		}
		return n.installResolved(ctx, s, r, r.Dist.Integrity, tarball)
	}
	reg := n.Registry
	if reg == nil {
		reg = NPMCLI{Cache: filepath.Join(n.Cache, "npm")}
	}
	spec := s.Version
	if spec == "" {
		spec = "latest"
	}
	r, err := reg.View(ctx, s.Name, spec)
	if err != nil {
		return Installed{}, fmt.Errorf("%w: resolving %s@%s: %w", ErrFetch, s.Name, spec, err)
	}
	if r.Name != s.Name || r.Version == "" {
		return Installed{}, fmt.Errorf("%w: resolving %s@%s: the registry answered %s@%s", ErrFetch, s.Name, spec, r.Name, r.Version)
	}
	integrity := r.Dist.Integrity
	if integrity == "" && r.Dist.Shasum != "" {
		b, err := hex.DecodeString(r.Dist.Shasum)
		if err != nil {
			return Installed{}, fmt.Errorf("%w: %s@%s: bad shasum %q", ErrFetch, s.Name, r.Version, r.Dist.Shasum)
		}
		integrity = "sha1-" + base64.StdEncoding.EncodeToString(b)
	}
	if integrity == "" {
		return Installed{}, fmt.Errorf("%w: %s@%s: the registry gives no integrity", ErrFetch, s.Name, r.Version)
	}
	if err := refuseDeps(r.Manifest); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrFetch, s.Name, r.Version, err)
	}
	tarball, err := n.download(ctx, reg, r.Name, r.Version, integrity)
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrFetch, s.Name, r.Version, err)
	}
	return n.installResolved(ctx, s, r, integrity, tarball)
}

// installResolved installs a resolved package from its cached tarball:
// the tree with scripts off, the entry point, the scripts in a sandbox.
func (n NPM) installResolved(ctx context.Context, s Spec, r Resolved, integrity, tarball string) (Installed, error) {
	dir, err := n.installTree(ctx, r.Name, r.Version, integrity, tarball)
	if err != nil {
		return Installed{}, err
	}
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(r.Name))
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrInstall, s.Name, r.Version, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: package.json: %w", ErrInstall, s.Name, r.Version, err)
	}
	e, err := ChooseEntry(m, s.Bin)
	if err != nil {
		return Installed{}, fmt.Errorf("%s@%s: %w", s.Name, r.Version, err)
	}
	if _, err := os.Stat(filepath.Join(pkgDir, filepath.FromSlash(e.Path))); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: entry %s (%s): %w", ErrInstall, s.Name, r.Version, e.Path, e.Why, err)
	}
	in := Installed{Dir: dir, Version: r.Version, Integrity: integrity, Entry: &e}
	script := PackageTarget + "/node_modules/" + r.Name + "/" + e.Path
	if interp := shebang(filepath.Join(pkgDir, filepath.FromSlash(e.Path))); interp != "" && !strings.Contains(interp, "node") {
		in.Argv = append([]string{script}, s.Args...) // its own interpreter
	} else {
		in.Argv = append([]string{"node", script}, s.Args...)
	}
	if err := n.runScripts(ctx, s, &in, r.Name, r.Version, integrity); err != nil {
		return in, err
	}
	if rng := m.Engines["node"]; rng != "" && n.Node != "" {
		ok, err := Satisfies(n.Node, rng)
		switch {
		case err != nil:
			in.Notes = append(in.Notes, fmt.Sprintf("engines.node %q not understood (%v); scanned with node %s", rng, err, n.Node))
		case !ok:
			in.Notes = append(in.Notes, fmt.Sprintf("engines.node %q excludes the image's node %s: scanned anyway", rng, n.Node))
		}
	}
	return in, nil
}

// shebang returns a script's #! line, "" for none.
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 128)
	k, _ := io.ReadFull(f, b)
	line, _, _ := bytes.Cut(b[:k], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return ""
	}
	return string(line)
}

// refuseDeps refuses dependencies npm would fetch from elsewhere than the
// registry: git and tarball-URL dependencies run `prepare` on the host
// even with scripts off; file and link ones reach outside the package.
func refuseDeps(m Manifest) error {
	for _, deps := range []map[string]string{m.Dependencies, m.OptionalDependencies} {
		for _, name := range sortedKeys(deps) {
			if why := nonRegistry(deps[name]); why != "" {
				return fmt.Errorf("dependency %s %q is %s: refused (it would run code on the host)", name, deps[name], why)
			}
		}
	}
	return nil
}

// nonRegistry says what kind of non-registry spec s is, "" for a registry
// version, range, tag or npm: alias.
func nonRegistry(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "git+"), strings.HasPrefix(s, "git:"), strings.HasPrefix(s, "github:"),
		strings.HasPrefix(s, "gitlab:"), strings.HasPrefix(s, "bitbucket:"), strings.HasPrefix(s, "gist:"):
		return "a git dependency"
	case strings.HasPrefix(s, "http:"), strings.HasPrefix(s, "https:"):
		return "a tarball-URL dependency"
	case strings.HasPrefix(s, "file:"), strings.HasPrefix(s, "link:"), strings.HasPrefix(s, "."), strings.HasPrefix(s, "/"):
		return "a local dependency"
	case strings.HasPrefix(s, "npm:"):
		return ""
	case strings.Contains(s, "/"):
		return "a git dependency (GitHub shorthand)"
	}
	return ""
}

// sriHash returns the hash an SRI string names and its expected sum.
func sriHash(integrity string) (hash.Hash, []byte, error) {
	// An SRI may list several hashes; the strongest comes first in npm's.
	first, _, _ := strings.Cut(strings.TrimSpace(integrity), " ")
	algo, b64, ok := strings.Cut(first, "-")
	if !ok {
		return nil, nil, fmt.Errorf("integrity %q: want ALGO-BASE64", integrity)
	}
	want, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, nil, fmt.Errorf("integrity %q: %w", integrity, err)
	}
	switch algo {
	case "sha512":
		return sha512.New(), want, nil
	case "sha1":
		return sha1.New(), want, nil
	}
	return nil, nil, fmt.Errorf("integrity %q: unsupported algorithm %s", integrity, algo)
}

// download returns the tarball of integrity in the cache, downloading it
// when absent; a download whose hash differs is refused.
func (n NPM) download(ctx context.Context, reg NPMRegistry, name, version, integrity string) (string, error) {
	h, want, err := sriHash(integrity)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(n.Cache, "tarballs")
	final := filepath.Join(dir, strings.SplitN(integrity, "-", 2)[0]+"-"+hex.EncodeToString(want)+".tgz")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".pack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	got, err := reg.Pack(ctx, name, version, tmp)
	if err != nil {
		return "", err
	}
	f, err := os.Open(got)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", err
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, want) {
		return "", fmt.Errorf("the download's hash %x is not the registry's integrity %s: refused", sum, integrity)
	}
	if err := os.Rename(got, final); err != nil {
		return "", err
	}
	return final, nil
}

// lockfile is what package-lock.json says of each installed package.
type lockfile struct {
	Packages map[string]struct {
		Resolved string `json:"resolved"`
		Link     bool   `json:"link"`
	} `json:"packages"`
}

// installTree installs the tarball with its dependencies, scripts off,
// into the cache (once per name, version and integrity) and returns the
// prefix. The dependency tree is resolved first (a lockfile, nothing
// downloaded) and refused when anything in it comes from elsewhere than
// the registry.
func (n NPM) installTree(ctx context.Context, name, version, integrity, tarball string) (string, error) {
	_, want, _ := sriHash(integrity)
	base := filepath.Join(n.Cache, "trees")
	final := filepath.Join(base, strings.NewReplacer("@", "", "/", "__").Replace(name)+"@"+version+"-"+hex.EncodeToString(want)[:16])
	if _, err := os.Stat(filepath.Join(final, installedMarker)); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInstall, err)
	}
	tmp, err := os.MkdirTemp(base, ".install-")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInstall, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	pj, _ := json.Marshal(map[string]any{"name": installPackageName, "private": true, "dependencies": map[string]string{name: "file:" + tarball}})
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pj, 0o644); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInstall, err)
	}
	cli := NPMCLI{Cache: filepath.Join(n.Cache, "npm")}
	flags := []string{"--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--install-links=false"}
	if _, err := cli.npm(ctx, tmp, append([]string{"install", "--package-lock-only"}, flags...)...); err != nil {
		return "", fmt.Errorf("%w: resolving the dependencies: %w", ErrFetch, err)
	}
	if err := n.checkLock(filepath.Join(tmp, "package-lock.json"), name, tarball, tmp); err != nil {
		return "", fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	if _, err := cli.npm(ctx, tmp, append([]string{"ci"}, flags...)...); err != nil {
		// npm ci refuses a lockfile npm install --package-lock-only just
		// wrote when it judges it out of sync (peer and platform-specific
		// dependencies): install from it instead, and check what that
		// installed the same way.
		if _, ierr := cli.npm(ctx, tmp, append([]string{"install"}, flags...)...); ierr != nil {
			return "", fmt.Errorf("%w: %w", ErrInstall, errors.Join(err, ierr))
		}
		if err := n.checkLock(filepath.Join(tmp, "package-lock.json"), name, tarball, tmp); err != nil {
			return "", fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
		}
	}
	mark, _ := json.Marshal(map[string]string{"name": name, "version": version, "integrity": integrity})
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), mark, 0o644); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, installedMarker)); serr == nil {
			return final, nil // another job installed it first
		}
		os.RemoveAll(final) // an unfinished tree of an earlier run
		if err := os.Rename(tmp, final); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInstall, err)
		}
	}
	return final, nil
}

// checkLock refuses a dependency tree with anything resolved elsewhere
// than the registry, but the package's own tarball.
func (n NPM) checkLock(path, name, tarball, dir string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var lock lockfile
	if err := json.Unmarshal(b, &lock); err != nil {
		return fmt.Errorf("package-lock.json: %w", err)
	}
	reg := n.RegistryURL
	if reg == "" {
		reg = defaultRegistryURL
	}
	var bad []error
	for _, key := range sortedKeys(lock.Packages) {
		p := lock.Packages[key]
		if key == "" {
			continue
		}
		if key == "node_modules/"+name {
			if f, ok := strings.CutPrefix(p.Resolved, "file:"); ok && filepath.Clean(filepath.Join(dir, f)) == filepath.Clean(tarball) {
				continue
			}
		}
		switch {
		case p.Link:
			bad = append(bad, fmt.Errorf("%s is a link: refused", key))
		case p.Resolved == "":
			// A dependency npm left unresolved (an optional one for another
			// platform): nothing is fetched.
		case !strings.HasPrefix(p.Resolved, reg):
			bad = append(bad, fmt.Errorf("%s resolves to %s, not the registry: refused (git and tarball-URL dependencies run code on the host)", key, p.Resolved))
		}
	}
	return errors.Join(bad...)
}

// maxNPMErrorLines bounds the lines of npm's stderr an error quotes.
const maxNPMErrorLines = 3

// npmErrors returns the first lines of npm's stderr that say what went
// wrong ("npm error code E404", "npm error 404 Not Found - GET ..."),
// without the pointer to its log; the last lines when none says.
func npmErrors(s string) string {
	var picked, all []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		all = append(all, l)
		if strings.HasPrefix(l, "npm error") && !strings.Contains(l, "A complete log") && len(picked) < maxNPMErrorLines {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 && len(all) > maxNPMErrorLines {
		picked = all[len(all)-maxNPMErrorLines:]
	} else if len(picked) == 0 {
		picked = all
	}
	return strings.Join(picked, "; ")
}
