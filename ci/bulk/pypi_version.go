package bulk

// pypi_version.go reads Python package names and versions by PyPA's rules
// (PEP 503 names, PEP 440 versions and specifiers), as far as picking a
// wheel needs: a name or version that does not read is refused, never
// guessed at. Both reach host paths only through checkFileName.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxPyPIName bounds a project name (PyPI's own is shorter; this is a
// path component of the cache).
const maxPyPIName = 128

// pypiNameRE is PEP 508's name, which PyPI enforces.
var pypiNameRE = regexp.MustCompile(`(?i)^([a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$`)

// normalizePyPI is PEP 503's normalized name: lower case, each run of
// -, _ and . one -.
func normalizePyPI(name string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r == '-' || r == '_' || r == '.' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

// checkPyPIName refuses a name PEP 508 does not allow.
func checkPyPIName(name string) error {
	if len(name) > maxPyPIName || !pypiNameRE.MatchString(name) {
		return fmt.Errorf("%w: Python project name %q", ErrInvalidPackage, name)
	}
	return nil
}

// pyVersion is a PEP 440 version: [N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local].
type pyVersion struct {
	epoch   int
	release []int
	pre     int // 0 none; 1 a, 2 b, 3 rc
	preN    int
	post    int // -1 none
	dev     int // -1 none
	local   string
	text    string
}

// pyVersionRE reads the normalized forms and the common spellings PEP 440
// normalizes (alpha, beta, c, pre, preview, -, _ separators, implicit 0).
var pyVersionRE = regexp.MustCompile(`^v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?(?:(?:-(\d+))|(?:[-_.]?(post|rev|r)[-_.]?(\d*)))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$`)

// maxVersionPart bounds each number of a version.
const maxVersionPart = 1 << 40

func parsePyVersion(s string) (pyVersion, error) {
	m := pyVersionRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil || len(s) > 128 {
		return pyVersion{}, fmt.Errorf("%w: Python version %q", ErrInvalidPackage, s)
	}
	num := func(t string) int {
		if t == "" {
			return 0
		}
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n > maxVersionPart {
			return -2
		}
		return int(n)
	}
	v := pyVersion{epoch: num(m[1]), post: -1, dev: -1, local: m[10], text: s}
	for _, p := range strings.Split(m[2], ".") {
		v.release = append(v.release, num(p))
	}
	switch m[3] {
	case "a", "alpha":
		v.pre = 1
	case "b", "beta":
		v.pre = 2
	case "c", "rc", "pre", "preview":
		v.pre = 3
	}
	v.preN = num(m[4])
	switch {
	case m[5] != "":
		v.post = num(m[5])
	case m[6] != "":
		v.post = num(m[7])
	}
	if m[8] != "" {
		v.dev = num(m[9])
	}
	for _, n := range append(slices.Clone(v.release), v.epoch, v.preN, v.post, v.dev) {
		if n == -2 {
			return pyVersion{}, fmt.Errorf("%w: Python version %q: a number out of bounds", ErrInvalidPackage, s)
		}
	}
	return v, nil
}

// prerelease says whether v is a pre- or development release.
func (v pyVersion) prerelease() bool { return v.pre != 0 || v.dev >= 0 }

// String is the version as PEP 440 normalizes it.
func (v pyVersion) String() string {
	var b strings.Builder
	if v.epoch != 0 {
		fmt.Fprintf(&b, "%d!", v.epoch)
	}
	for i, n := range v.release {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(n))
	}
	if v.pre != 0 {
		b.WriteString([]string{"", "a", "b", "rc"}[v.pre])
		b.WriteString(strconv.Itoa(v.preN))
	}
	if v.post >= 0 {
		fmt.Fprintf(&b, ".post%d", v.post)
	}
	if v.dev >= 0 {
		fmt.Fprintf(&b, ".dev%d", v.dev)
	}
	if v.local != "" {
		b.WriteString("+" + strings.NewReplacer("-", ".", "_", ".").Replace(v.local))
	}
	return b.String()
}

// cmpRelease compares release segments, trailing zeros ignored.
func cmpRelease(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// compare orders versions as PEP 440 does (X.devN < XaN < X < X.postN),
// the local label last.
func (v pyVersion) compare(w pyVersion) int {
	if c := cmpInt(v.epoch, w.epoch); c != 0 {
		return c
	}
	if c := cmpRelease(v.release, w.release); c != 0 {
		return c
	}
	preKey := func(x pyVersion) [2]int {
		switch {
		case x.pre == 0 && x.post < 0 && x.dev >= 0:
			return [2]int{-1, 0}
		case x.pre == 0:
			return [2]int{4, 0}
		}
		return [2]int{x.pre, x.preN}
	}
	pa, pb := preKey(v), preKey(w)
	if c := cmpInt(pa[0], pb[0]); c != 0 {
		return c
	}
	if c := cmpInt(pa[1], pb[1]); c != 0 {
		return c
	}
	if c := cmpInt(v.post, w.post); c != 0 {
		return c
	}
	devKey := func(x pyVersion) int {
		if x.dev < 0 {
			return maxVersionPart + 1
		}
		return x.dev
	}
	if c := cmpInt(devKey(v), devKey(w)); c != 0 {
		return c
	}
	return strings.Compare(v.local, w.local)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pySpecifier is one clause of a PEP 440 specifier set.
type pySpecifier struct {
	op       string
	version  pyVersion
	wildcard bool // ==V.* or !=V.*
	text     string
}

// pySpecifiers is a specifier set: every clause must hold.
type pySpecifiers []pySpecifier

var pySpecRE = regexp.MustCompile(`^(===|==|!=|~=|<=|>=|<|>)\s*([^\s,;]+)$`)

// parsePySpecifiers reads "==1.2", ">=1,<2", "" (anything).
func parsePySpecifiers(s string) (pySpecifiers, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out pySpecifiers
	for _, clause := range strings.Split(s, ",") {
		m := pySpecRE.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return nil, fmt.Errorf("%w: version specifier %q", ErrInvalidPackage, clause)
		}
		sp := pySpecifier{op: m[1], text: m[2]}
		ver := m[2]
		if m[1] == "==" || m[1] == "!=" {
			if v, ok := strings.CutSuffix(ver, ".*"); ok {
				sp.wildcard, ver = true, v
			}
		}
		if m[1] != "===" {
			v, err := parsePyVersion(ver)
			if err != nil {
				return nil, err
			}
			if m[1] == "~=" && len(v.release) < 2 {
				return nil, fmt.Errorf("%w: %q: ~= needs two release numbers", ErrInvalidPackage, clause)
			}
			sp.version = v
		}
		out = append(out, sp)
	}
	return out, nil
}

// pinned says whether the set names one version (==V, no wildcard), the
// one case a pre-release or a yanked file is taken.
func (ss pySpecifiers) pinned() bool {
	for _, s := range ss {
		if (s.op == "==" && !s.wildcard) || s.op == "===" {
			return true
		}
	}
	return false
}

// allowsPre says whether the set mentions a pre-release.
func (ss pySpecifiers) allowsPre() bool {
	for _, s := range ss {
		if s.op != "!=" && s.version.prerelease() {
			return true
		}
	}
	return false
}

// contains says whether v satisfies every clause.
func (ss pySpecifiers) contains(v pyVersion) bool {
	for _, s := range ss {
		if !s.holds(v) {
			return false
		}
	}
	return true
}

func (s pySpecifier) holds(v pyVersion) bool {
	public := v
	public.local = ""
	switch s.op {
	case "===":
		return v.text == s.text
	case "==", "!=":
		var eq bool
		if s.wildcard {
			eq = v.epoch == s.version.epoch && prefixRelease(v.release, s.version.release)
		} else if s.version.local == "" {
			eq = public.compare(s.version) == 0
		} else {
			eq = v.compare(s.version) == 0
		}
		return eq == (s.op == "==")
	case "~=":
		prefix := s.version.release[:len(s.version.release)-1]
		return public.compare(s.version) >= 0 && v.epoch == s.version.epoch && prefixRelease(v.release, prefix)
	case ">=":
		return public.compare(s.version) >= 0
	case "<=":
		return public.compare(s.version) <= 0
	case ">":
		// >V excludes V's post-releases unless V is one (PEP 440).
		if public.compare(s.version) <= 0 {
			return false
		}
		return s.version.post >= 0 || cmpRelease(v.release, s.version.release) != 0 || v.post < 0 || v.epoch != s.version.epoch
	case "<":
		// <V excludes V's pre-releases unless V is one.
		if public.compare(s.version) >= 0 {
			return false
		}
		return s.version.prerelease() || !v.prerelease() || cmpRelease(v.release, s.version.release) != 0
	}
	return false
}

// prefixRelease says whether release r starts with p (zero-padded).
func prefixRelease(r, p []int) bool {
	for i, n := range p {
		x := 0
		if i < len(r) {
			x = r[i]
		}
		if x != n {
			return false
		}
	}
	return true
}
