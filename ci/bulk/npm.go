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
	"path"
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

// UnmarshalJSON reads the manifest as Manifest does, keys spelt as npm
// spells them, and the dist.
func (r *Resolved) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &r.Manifest); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	r.Dist = Resolved{}.Dist
	if d, ok := raw["dist"]; ok {
		return json.Unmarshal(d, &r.Dist)
	}
	return nil
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
	// Registry is the registry npm uses (--registry), "" for npm's
	// configured one.
	Registry string
}

// npmNoGit is the git npm is given: a path that does not exist, so that
// nothing npm does (a git dependency's clone, its prepare) runs git on
// the host, even an npm too old for --allow-git.
const npmNoGit = "/nonexistent/mcpsandbox-no-git"

// npmSafeFlags go with every npm command: no lifecycle script, no git.
func npmSafeFlags() []string {
	return []string{"--ignore-scripts", "--git=" + npmNoGit, "--no-update-notifier"}
}

// npmInstallFlags go with the installs: nothing fetched but registry
// packages and the root's own tarball (npm 11 refuses the others itself;
// an older npm warns of an unknown option and goes on, the lockfile
// check still refusing them). Not for npm pack: it downloads a registry
// package by its tarball's URL, which npm counts as remote.
func npmInstallFlags() []string {
	return []string{"--allow-git=none", "--allow-remote=none", "--allow-directory=none", "--allow-file=root", "--no-audit", "--no-fund", "--install-links=false"}
}

func (c NPMCLI) npm(ctx context.Context, dir string, args ...string) ([]byte, error) {
	args = append(args, npmSafeFlags()...)
	if c.Cache != "" {
		args = append(args, "--cache", c.Cache)
	}
	if c.Registry != "" {
		args = append(args, "--registry", c.Registry)
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
	out, err := c.npm(ctx, dir, "pack", "--json", "--pack-destination", dir, name+"@"+version)
	if err != nil {
		return "", err
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		return "", fmt.Errorf("npm pack %s@%s: unexpected output %.200q", name, version, out)
	}
	if err := checkFileName(packed[0].Filename); err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %w", name, version, err)
	}
	return filepath.Join(dir, packed[0].Filename), nil
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

// treeDirMode is an installed tree's own directory's mode.
const treeDirMode = 0o755

// installedMarker is written last in an installed tree: a tree without it
// is unfinished and installed again.
const installedMarker = ".mcpsandbox-installed.json"

// installPackageName names the install prefix's own package.json: npm
// installs nothing when the prefix's name equals the package's.
const installPackageName = "mcpsandbox-bulk-install"

// Install implements Installer. Every host path it makes is built from
// a name and version checked by npm's rules (npm_check.go), never from a
// manifest's field as written, and checked to stay in the cache.
func (n NPM) Install(ctx context.Context, s Spec) (Installed, error) {
	if s.Tarball {
		r, tarball, err := n.resolveTarball(ctx, s)
		if err != nil {
			return Installed{}, err
		}
		return n.installResolved(ctx, s, r, r.Dist.Integrity, tarball)
	}
	spec := s.Version
	if spec == "" {
		spec = "latest"
	}
	if err := checkNPMName(s.Name); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrFetch, s.Name, spec, err)
	}
	if why := nonRegistry(spec); why != "" {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w: the version is %s, not a registry version, range or tag", ErrFetch, s.Name, spec, ErrInvalidPackage, why)
	}
	reg := n.Registry
	if reg == nil {
		npmCache, err := cachePath(n.Cache, npmCacheDir)
		if err != nil {
			return Installed{}, fmt.Errorf("%w: %w", ErrFetch, err)
		}
		reg = NPMCLI{Cache: npmCache, Registry: n.registryURL()}
	}
	r, err := reg.View(ctx, s.Name, spec)
	if err != nil {
		return Installed{}, fmt.Errorf("%w: resolving %s@%s: %w", ErrFetch, s.Name, spec, err)
	}
	if r.Name != s.Name || r.Version == "" {
		return Installed{}, fmt.Errorf("%w: resolving %s@%s: the registry answered %s@%s", ErrFetch, s.Name, spec, r.Name, r.Version)
	}
	if err := checkNPMVersion(r.Version); err != nil {
		return Installed{}, fmt.Errorf("%w: resolving %s@%s: the registry answered: %w", ErrFetch, s.Name, spec, err)
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

// registryURL is the registry dependencies must resolve to.
func (n NPM) registryURL() string {
	if n.RegistryURL == "" {
		return defaultRegistryURL
	}
	return n.RegistryURL
}

// installResolved installs a resolved package from its cached tarball:
// the tree with scripts off, the entry point (from the one manifest read
// out of the tarball npm installs), the scripts in a sandbox.
func (n NPM) installResolved(ctx context.Context, s Spec, r Resolved, integrity, tarball string) (Installed, error) {
	dir, m, cached, err := n.installTree(ctx, r.Name, r.Version, integrity, tarball)
	if err != nil {
		return Installed{}, err
	}
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(r.Name))
	if err := inside(dir, pkgDir); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: %w", ErrInstall, s.Name, r.Version, err)
	}
	e, err := ChooseEntryReadme(m, s.Bin, readReadme(pkgDir))
	if err != nil {
		return Installed{}, fmt.Errorf("%s@%s: %w", s.Name, r.Version, err)
	}
	entry := filepath.Join(pkgDir, filepath.FromSlash(e.Path))
	if err := inside(pkgDir, entry); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: entry %s: %w", ErrInstall, s.Name, r.Version, e.Path, err)
	}
	if _, err := os.Stat(entry); err != nil {
		return Installed{}, fmt.Errorf("%w: %s@%s: entry %s (%s): %w", ErrInstall, s.Name, r.Version, e.Path, e.Why, err)
	}
	in := Installed{Dir: dir, Version: r.Version, Integrity: integrity, Entry: &e, Cached: cached}
	script := PackageTarget + "/node_modules/" + r.Name + "/" + e.Path
	args := s.Args
	if len(args) == 0 && len(e.Args) > 0 {
		args = e.Args // as the README's configuration gives them
		in.Notes = append(in.Notes, fmt.Sprintf("started with the arguments the README's client configuration gives: %s", strings.Join(e.Args, " ")))
	}
	in.Argv = entryArgv(entry, script, args)
	if s.Bin == "" {
		// The other bins a user could have started, in case the chosen one
		// does not answer initialize (a CLI named like the package).
		bins, _ := m.Bins()
		for _, b := range sortedKeys(bins) {
			if b == e.Bin || bannedBin(b) || len(in.Alternatives) >= maxAlternatives {
				continue
			}
			p := path.Clean(strings.TrimPrefix(bins[b], "./"))
			file := filepath.Join(pkgDir, filepath.FromSlash(p))
			if p == "." || strings.HasPrefix(p, "../") || path.IsAbs(p) || inside(pkgDir, file) != nil {
				continue
			}
			if _, err := os.Stat(file); err != nil {
				continue
			}
			alt := Entry{Path: p, Bin: b, Why: "the next bin, after " + e.Name() + " did not answer initialize"}
			in.Alternatives = append(in.Alternatives, Alternative{Entry: alt, Argv: entryArgv(file, PackageTarget+"/node_modules/"+r.Name+"/"+p, s.Args)})
		}
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

// entryArgv is the command that runs the entry at host path file, seen
// at script in the sandbox: by its own interpreter when its #! names
// another than node, else by node.
func entryArgv(file, script string, args []string) []string {
	if interp := shebang(file); interp != "" && !strings.Contains(interp, "node") {
		return append([]string{script}, args...)
	}
	return append([]string{"node", script}, args...)
}

// maxAlternatives bounds the other bins tried when the chosen one does
// not start: each try is a scan.
const maxAlternatives = 3

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

// parseSRI reads an SRI string's first hash (the strongest, in npm's):
// its algorithm, sha512 or sha1, and its sum, of that algorithm's size.
func parseSRI(integrity string) (algo string, sum []byte, err error) {
	first, _, _ := strings.Cut(strings.TrimSpace(integrity), " ")
	algo, b64, ok := strings.Cut(first, "-")
	if !ok {
		return "", nil, fmt.Errorf("integrity %q: want ALGO-BASE64", integrity)
	}
	sum, err = base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, fmt.Errorf("integrity %q: %w", integrity, err)
	}
	size := map[string]int{"sha512": sha512.Size, "sha1": sha1.Size}[algo]
	if size == 0 {
		return "", nil, fmt.Errorf("integrity %q: unsupported algorithm %q", integrity, algo)
	}
	if len(sum) != size {
		return "", nil, fmt.Errorf("integrity %q: a %s sum of %d bytes, want %d", integrity, algo, len(sum), size)
	}
	return algo, sum, nil
}

// sriHash returns the hash an SRI string names and its expected sum.
func sriHash(integrity string) (hash.Hash, []byte, error) {
	algo, sum, err := parseSRI(integrity)
	if err != nil {
		return nil, nil, err
	}
	if algo == "sha1" {
		return sha1.New(), sum, nil
	}
	return sha512.New(), sum, nil
}

// tarballFileName names a tarball in the cache by its integrity: the
// checked algorithm and the sum in hex, never the string as given.
func tarballFileName(integrity string) (string, error) {
	algo, sum, err := parseSRI(integrity)
	if err != nil {
		return "", err
	}
	return algo + "-" + hex.EncodeToString(sum) + ".tgz", nil
}

// download returns the tarball of integrity in the cache, downloading it
// when absent; a download whose hash differs is refused.
func (n NPM) download(ctx context.Context, reg NPMRegistry, name, version, integrity string) (string, error) {
	h, want, err := sriHash(integrity)
	if err != nil {
		return "", err
	}
	file, err := tarballFileName(integrity)
	if err != nil {
		return "", err
	}
	final, err := cachePath(n.Cache, tarballsDir, file)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	dir := filepath.Dir(final)
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
	if err := inside(tmp, got); err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %w", name, version, err)
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

// packageTarball is the tarball npm installs in an install prefix: the
// one written from what was read (see readPackage), removed before the
// tree is renamed into place.
const packageTarball = "mcpsandbox-package.tgz"

// installTree installs the tarball with its dependencies, scripts off,
// into the cache (once per name, version and integrity) and returns the
// prefix and the package's manifest. npm is not given the tarball but a
// copy written from what was read of it, so that the manifest checked is
// the one npm installs. The dependency tree is resolved first (a
// lockfile, nothing downloaded) and refused when anything in it comes
// from elsewhere than the registry. Set-id, sticky and world-writable bits
// are stripped from the tree.
func (n NPM) installTree(ctx context.Context, name, version, integrity, tarball string) (dir string, m Manifest, cached bool, err error) {
	_, digest, err := parseSRI(integrity)
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	dirName, err := treeDirName(name, version, digest)
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	final, err := cachePath(n.Cache, treesDir, dirName)
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	if _, err := os.Stat(filepath.Join(final, installedMarker)); err == nil {
		m, err = readPackageFile(tarball, "")
		if err != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
		}
		// A tree installed by an earlier version kept its bits.
		if err := stripModes(final); err != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrInstall, name, version, err)
		}
		// A tree cached by an earlier version is 0700.
		if err := os.Chmod(final, treeDirMode); err != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrInstall, name, version, err)
		}
		return final, m, true, nil
	}
	base := filepath.Dir(final)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	tmp, err := os.MkdirTemp(base, ".install-")
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	// Readable as npm leaves the rest (MkdirTemp makes it 0700): a tree
	// bound into a sandbox is read by the sandbox's user.
	if err := os.Chmod(tmp, treeDirMode); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	own := filepath.Join(tmp, packageTarball)
	m, err = readPackageFile(tarball, own)
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	if err := refuseDeps(m); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	pj, _ := json.Marshal(map[string]any{"name": installPackageName, "private": true, "dependencies": map[string]string{name: "file:" + packageTarball}})
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pj, 0o644); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	npmCache, err := cachePath(n.Cache, npmCacheDir)
	if err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	cli := NPMCLI{Cache: npmCache, Registry: n.registryURL()}
	flags := npmInstallFlags()
	if _, err := cli.npm(ctx, tmp, append([]string{"install", "--package-lock-only"}, flags...)...); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: resolving the dependencies: %w", ErrFetch, err)
	}
	if err := n.checkLock(filepath.Join(tmp, "package-lock.json"), name, own, tmp); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
	}
	if _, err := cli.npm(ctx, tmp, append([]string{"ci"}, flags...)...); err != nil {
		// npm ci refuses a lockfile npm install --package-lock-only just
		// wrote when it judges it out of sync (peer and platform-specific
		// dependencies): install from it instead, and check what that
		// installed the same way.
		if _, ierr := cli.npm(ctx, tmp, append([]string{"install"}, flags...)...); ierr != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, errors.Join(err, ierr))
		}
		if err := n.checkLock(filepath.Join(tmp, "package-lock.json"), name, own, tmp); err != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrFetch, name, version, err)
		}
	}
	if err := os.Remove(own); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	// The registry's packages npm extracted itself, bits and all.
	if err := stripModes(tmp); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %s@%s: %w", ErrInstall, name, version, err)
	}
	mark, _ := json.Marshal(map[string]string{"name": name, "version": version, "integrity": integrity})
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), mark, 0o644); err != nil {
		return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, installedMarker)); serr == nil {
			return final, m, false, nil // another job installed it first
		}
		os.RemoveAll(final) // an unfinished tree of an earlier run
		if err := os.Rename(tmp, final); err != nil {
			return "", Manifest{}, false, fmt.Errorf("%w: %w", ErrInstall, err)
		}
	}
	return final, m, false, nil
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
