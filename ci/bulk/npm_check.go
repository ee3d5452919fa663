package bulk

// npm_check.go is what the fetch checks before it writes on the host:
// names and versions by npm's rules, dependency specs by where npm would
// fetch them from, and every host path built from checked parts only and
// kept inside the cache. A package's manifest is attacker-written: none of
// its fields reaches a path unchecked.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

var (
	// ErrInvalidPackage is wrapped when a package's name, version or file
	// name is not one npm's rules allow.
	ErrInvalidPackage = errors.New("invalid package")
	// ErrNonRegistryDependency is wrapped when a dependency would be
	// fetched from elsewhere than the registry.
	ErrNonRegistryDependency = errors.New("non-registry dependency")
	// ErrAmbiguousTarball is wrapped when a tarball could be read in more
	// than one way: two entries npm's extraction writes to one path.
	ErrAmbiguousTarball = errors.New("ambiguous tarball")
	// ErrOutsideCache is wrapped when a host path would leave the cache.
	ErrOutsideCache = errors.New("outside the cache")
)

// Cache layout: each a directory of the cache.
const (
	tarballsDir = "tarballs"
	treesDir    = "trees"
	npmCacheDir = "npm"
)

const (
	// maxNPMName is npm's bound on a package name.
	maxNPMName = 214
	// maxNPMVersion is node-semver's bound on a version string.
	maxNPMVersion = 256
)

// checkNPMName checks a name by npm's rules for new packages
// (validate-npm-package-name): lower case, URL-safe, at most 214
// characters, an optional @scope/, no leading . or _, not node_modules
// or favicon.ico. It is a path component of the cache, so nothing else.
func checkNPMName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: package name %q %s", ErrInvalidPackage, name, why)
	}
	switch low := strings.ToLower(name); {
	case name == "":
		return bad("is empty")
	case len(name) > maxNPMName:
		return bad(fmt.Sprintf("is over %d characters", maxNPMName))
	case low == "node_modules" || low == "favicon.ico":
		return bad("is one npm reserves")
	}
	parts := []string{name}
	if rest, ok := strings.CutPrefix(name, "@"); ok {
		scope, pkg, ok := strings.Cut(rest, "/")
		if !ok || scope == "" || pkg == "" {
			return bad("wants @scope/name")
		}
		parts = []string{scope, pkg}
	}
	for _, p := range parts {
		if p[0] == '.' || p[0] == '_' {
			return bad("starts with . or _")
		}
		for _, c := range p {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
			case c >= 'A' && c <= 'Z':
				return bad("has capital letters")
			case c == '/' || c == '\\':
				return bad("has a path separator besides the scope's /")
			default:
				return bad(fmt.Sprintf("has %q, which is not URL-safe", c))
			}
		}
	}
	return nil
}

// checkNPMVersion checks a version as strict semver 2.0: MAJOR.MINOR.PATCH
// without leading zeros, an optional -prerelease and +build of dot-separated
// identifiers ([0-9A-Za-z-]), no v, no spaces.
func checkNPMVersion(v string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: version %q is not semver: %s", ErrInvalidPackage, v, why)
	}
	if v == "" {
		return bad("empty")
	}
	if len(v) > maxNPMVersion {
		return bad(fmt.Sprintf("over %d characters", maxNPMVersion))
	}
	rest, build, hasBuild := strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return bad("want MAJOR.MINOR.PATCH")
	}
	for _, n := range nums {
		if !numericID(n) {
			return bad(fmt.Sprintf("%q is not a number without leading zeros", n))
		}
	}
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			if !alnumID(id) || (isDigits(id) && !numericID(id)) {
				return bad(fmt.Sprintf("prerelease identifier %q", id))
			}
		}
	}
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if !alnumID(id) {
				return bad(fmt.Sprintf("build identifier %q", id))
			}
		}
	}
	return nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// numericID is semver's numeric identifier: digits, no leading zero.
func numericID(s string) bool { return isDigits(s) && (s == "0" || s[0] != '0') }

// alnumID is semver's identifier: [0-9A-Za-z-]+.
func alnumID(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return s != ""
}

// checkFileName checks a file name npm gave (npm pack's) as one path
// component.
func checkFileName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("%w: file name %q is not one path component", ErrInvalidPackage, name)
	}
	return nil
}

// inside refuses a path that is not strictly under root: built from
// checked parts, it never is, but a path leaving the cache would write
// anywhere on the host.
func inside(root, p string) error {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%w: %s is not inside %s", ErrOutsideCache, p, root)
	}
	return nil
}

// cachePath joins path components under the cache, each one component
// (checked), and checks the result stays inside.
func cachePath(cache string, parts ...string) (string, error) {
	for _, p := range parts {
		if err := checkFileName(p); err != nil {
			return "", fmt.Errorf("%w: %w", ErrOutsideCache, err)
		}
	}
	root := filepath.Clean(cache)
	p := filepath.Join(append([]string{root}, parts...)...)
	if err := inside(root, p); err != nil {
		return "", err
	}
	return p, nil
}

// treeDirName names an installed tree in the cache: from a checked name
// and version, and the integrity's digest.
func treeDirName(name, version string, digest []byte) (string, error) {
	if err := checkNPMName(name); err != nil {
		return "", err
	}
	if err := checkNPMVersion(version); err != nil {
		return "", err
	}
	if len(digest)*2 < treeDigest {
		return "", fmt.Errorf("%w: a digest of %d bytes", ErrInvalidPackage, len(digest))
	}
	return strings.NewReplacer("@", "", "/", "__").Replace(name) + "@" + version + "-" + hex.EncodeToString(digest)[:treeDigest], nil
}

// treeDigest is how many hex digits of the integrity a tree's name has.
const treeDigest = 16

// refuseDeps refuses dependencies npm would fetch from elsewhere than the
// registry: git and tarball-URL dependencies run `prepare` on the host
// even with scripts off; file and link ones reach outside the package.
// These are the ones npm installs for a dependency (its devDependencies
// are not); overrides too, though npm heeds only the root's.
func refuseDeps(m Manifest) error {
	for _, set := range []struct {
		field string
		deps  map[string]string
	}{{"dependencies", m.Dependencies}, {"optionalDependencies", m.OptionalDependencies}, {"peerDependencies", m.PeerDependencies}} {
		for _, name := range sortedKeys(set.deps) {
			if !validNPMName(name) {
				return fmt.Errorf("%w: %s: %q is not a package name: refused", ErrNonRegistryDependency, set.field, name)
			}
			if why := nonRegistry(set.deps[name]); why != "" {
				return fmt.Errorf("%w: dependency %s %q is %s: refused (it would run code on the host)", ErrNonRegistryDependency, name, set.deps[name], why)
			}
		}
	}
	over, err := overrideSpecs("", m.Overrides)
	if err != nil {
		return fmt.Errorf("%w: overrides: %w", ErrNonRegistryDependency, err)
	}
	for _, key := range sortedKeys(over) {
		if why := nonRegistry(over[key]); why != "" {
			return fmt.Errorf("%w: override %s %q is %s: refused (it would run code on the host)", ErrNonRegistryDependency, key, over[key], why)
		}
	}
	return nil
}

// overrideSpecs flattens npm's overrides (a spec, or an object of them
// with "." for the package itself) into specs by path ("a > b").
func overrideSpecs(at string, raw json.RawMessage) (map[string]string, error) {
	out := map[string]string{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var spec string
	if json.Unmarshal(raw, &spec) == nil {
		if !strings.HasPrefix(spec, "$") { // $NAME: the root's own spec of NAME
			out[at] = spec
		}
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%q: neither a spec nor an object", at)
	}
	for k, v := range obj {
		key := k
		if at != "" {
			key = at + " > " + k
		}
		sub, err := overrideSpecs(key, v)
		if err != nil {
			return nil, err
		}
		for sk, sv := range sub {
			out[sk] = sv
		}
	}
	return out, nil
}

// nonRegistry says what kind of non-registry spec s is, "" for a registry
// version, range, tag or npm: alias of a registry package.
func nonRegistry(s string) string {
	s = strings.TrimSpace(s)
	if alias, ok := strings.CutPrefix(s, "npm:"); ok {
		name, spec := alias, ""
		if at := strings.LastIndex(alias, "@"); at > 0 {
			name, spec = alias[:at], alias[at+1:]
		}
		if !validNPMName(name) {
			return "an npm: alias of no package name"
		}
		if why := nonRegistry(spec); why != "" {
			return "an npm: alias of " + why
		}
		return ""
	}
	switch {
	case strings.HasPrefix(s, "git+"), strings.HasPrefix(s, "git:"), strings.HasPrefix(s, "github:"),
		strings.HasPrefix(s, "gitlab:"), strings.HasPrefix(s, "bitbucket:"), strings.HasPrefix(s, "gist:"):
		return "a git dependency"
	case strings.HasPrefix(s, "http:"), strings.HasPrefix(s, "https:"):
		return "a tarball-URL dependency"
	case strings.HasPrefix(s, "file:"), strings.HasPrefix(s, "link:"), strings.HasPrefix(s, "."), strings.HasPrefix(s, "/"),
		strings.HasPrefix(s, "~/"), strings.Contains(s, `\`), len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]):
		return "a local dependency"
	case strings.Contains(s, ":"):
		return "a URL dependency"
	case strings.Contains(s, "/"):
		return "a git dependency (GitHub shorthand)"
	}
	return ""
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// unsafeModeBits are stripped from every file and directory of a tree on
// the host: a set-id file in the cache runs as its owner (root, when bulk
// runs as root) for whoever executes it, a sticky bit on a file means
// nothing good, and world-writable lets any local user change what a scan
// runs. (A directory's sticky bit is kept: it only restricts.)
const unsafeModeBits = fs.ModeSetuid | fs.ModeSetgid | 0o002

// stripModes removes unsafeModeBits (and the sticky bit of files) from the
// tree at root, not following symbolic links: each file is opened with
// O_NOFOLLOW and changed through its descriptor, so that a link is never
// followed out of the tree.
func stripModes(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking %s: %w", root, err)
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil // links (npm's .bin) and the rest: left as they are
		}
		info, err := d.Info() // lstat: cheap, and most need nothing
		if err != nil {
			return fmt.Errorf("walking %s: %w", root, err)
		}
		if info.Mode()&(unsafeModeBits|fs.ModeSticky) == 0 {
			return nil
		}
		return chmodNoFollow(p)
	})
}

// chmodNoFollow strips the unsafe bits of p through a descriptor opened
// without following a link.
func chmodNoFollow(p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("stripping set-id bits: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stripping set-id bits: %w", err)
	}
	mode := info.Mode()
	if !mode.IsRegular() && !mode.IsDir() {
		return nil
	}
	strip := unsafeModeBits
	if !mode.IsDir() {
		strip |= fs.ModeSticky
	}
	if mode&strip == 0 {
		return nil
	}
	if err := f.Chmod(mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky) &^ strip); err != nil {
		return fmt.Errorf("stripping set-id bits: %w", err)
	}
	return nil
}
