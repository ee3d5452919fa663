package bulk

// pypi_req.go reads PEP 508 requirements (a wheel's Requires-Dist, a
// launcher line's package) and evaluates their environment markers for
// the python image. A requirement that names a URL is refused: it would
// be fetched from wherever the package says.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// pyRequirement is one requirement: NAME[EXTRAS] SPECIFIERS ; MARKER.
type pyRequirement struct {
	name   string // as written
	extras []string
	specs  pySpecifiers
	marker markerExpr // nil: always
	text   string
}

var pyReqHeadRE = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*`)

// maxRequirement bounds a requirement's text.
const maxRequirement = 4096

// parsePyRequirement reads one requirement.
func parsePyRequirement(s string) (pyRequirement, error) {
	if len(s) > maxRequirement {
		return pyRequirement{}, fmt.Errorf("%w: a requirement of %d bytes", ErrInvalidPackage, len(s))
	}
	r := pyRequirement{text: s}
	body, marker, hasMarker := strings.Cut(s, ";")
	m := pyReqHeadRE.FindStringSubmatch(body)
	if m == nil {
		return r, fmt.Errorf("%w: requirement %q", ErrInvalidPackage, s)
	}
	r.name = m[1]
	if err := checkPyPIName(r.name); err != nil {
		return r, err
	}
	for _, e := range strings.Split(m[2], ",") {
		if e = strings.TrimSpace(e); e != "" {
			if checkPyPIName(e) != nil {
				return r, fmt.Errorf("%w: requirement %q: extra %q", ErrInvalidPackage, s, e)
			}
			r.extras = append(r.extras, normalizePyPI(e))
		}
	}
	rest := strings.TrimSpace(body[len(m[0]):])
	if strings.HasPrefix(rest, "@") {
		return r, fmt.Errorf("%w: requirement %q names a URL: refused (only the index is fetched from)", ErrNonRegistryDependency, s)
	}
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		rest = rest[1 : len(rest)-1]
	}
	specs, err := parsePySpecifiers(rest)
	if err != nil {
		return r, fmt.Errorf("requirement %q: %w", s, err)
	}
	r.specs = specs
	if hasMarker {
		e, err := parseMarker(marker)
		if err != nil {
			return r, fmt.Errorf("requirement %q: %w", s, err)
		}
		r.marker = e
	}
	return r, nil
}

// pyEnv is the marker environment of the python image.
type pyEnv map[string]string

// newPyEnv is the environment of the image's python (X.Y.Z) on machine
// (uname -m).
func newPyEnv(python, machine string) pyEnv {
	short := python
	if parts := strings.Split(python, "."); len(parts) >= 2 {
		short = parts[0] + "." + parts[1]
	}
	return pyEnv{
		"python_version": short, "python_full_version": python, "implementation_version": python,
		"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": machine,
		"platform_python_implementation": "CPython", "implementation_name": "cpython",
		"platform_release": "", "platform_version": "",
	}
}

// markerExpr is a parsed marker; eval is given the extras asked for.
type markerExpr interface {
	eval(env pyEnv, extras []string) bool
}

type markerAnd [2]markerExpr
type markerOr [2]markerExpr
type markerCmp struct {
	left, op, right   string
	leftVar, rightVar bool
}

func (m markerAnd) eval(env pyEnv, x []string) bool { return m[0].eval(env, x) && m[1].eval(env, x) }
func (m markerOr) eval(env pyEnv, x []string) bool  { return m[0].eval(env, x) || m[1].eval(env, x) }

func (m markerCmp) eval(env pyEnv, extras []string) bool {
	if m.leftVar && m.left == "extra" || m.rightVar && m.right == "extra" {
		want := m.right
		if m.rightVar {
			want = m.left
		}
		has := slices.Contains(extras, normalizePyPI(want))
		switch m.op {
		case "==":
			return has
		case "!=":
			return !has
		}
		return false
	}
	l, r := m.left, m.right
	if m.leftVar {
		l = env[m.left]
	}
	if m.rightVar {
		r = env[m.right]
	}
	switch m.op {
	case "in":
		return strings.Contains(r, l)
	case "not in":
		return !strings.Contains(r, l)
	}
	if lv, err := parsePyVersion(l); err == nil {
		if specs, err := parsePySpecifiers(m.op + r); err == nil {
			return specs.contains(lv)
		}
	}
	switch m.op {
	case "==", "===":
		return l == r
	case "!=":
		return l != r
	}
	return false
}

// markerVars are the variables PEP 508 defines.
var markerVars = map[string]bool{
	"python_version": true, "python_full_version": true, "os_name": true, "sys_platform": true,
	"platform_release": true, "platform_system": true, "platform_version": true, "platform_machine": true,
	"platform_python_implementation": true, "implementation_name": true, "implementation_version": true,
	"extra": true, "os.name": true, "sys.platform": true, "platform.version": true, "platform.machine": true,
	"platform.python_implementation": true, "python_implementation": true,
}

// markerAliases are the old dotted names PEP 508 still reads.
var markerAliases = map[string]string{"os.name": "os_name", "sys.platform": "sys_platform", "platform.version": "platform_version",
	"platform.machine": "platform_machine", "platform.python_implementation": "platform_python_implementation", "python_implementation": "platform_python_implementation"}

var errMarker = errors.New("environment marker")

type markerParser struct {
	toks []string
	i    int
}

// maxMarkerTokens bounds a marker's size (and so its nesting).
const maxMarkerTokens = 512

var markerTokRE = regexp.MustCompile(`^\s*(\(|\)|===|==|!=|~=|<=|>=|<|>|'[^']*'|"[^"]*"|[A-Za-z_][A-Za-z0-9_.]*)`)

func parseMarker(s string) (markerExpr, error) {
	p := markerParser{}
	for rest := s; strings.TrimSpace(rest) != ""; {
		m := markerTokRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("%w %q: cannot read %q", errMarker, s, strings.TrimSpace(rest))
		}
		p.toks = append(p.toks, m[1])
		rest = rest[len(m[0]):]
		if len(p.toks) > maxMarkerTokens {
			return nil, fmt.Errorf("%w: more than %d tokens", errMarker, maxMarkerTokens)
		}
	}
	e, err := p.or()
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", errMarker, s, err)
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("%w %q: %q left over", errMarker, s, p.toks[p.i])
	}
	return e, nil
}

func (p *markerParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *markerParser) or() (markerExpr, error) {
	e, err := p.and()
	for err == nil && p.peek() == "or" {
		p.i++
		var r markerExpr
		if r, err = p.and(); err == nil {
			e = markerOr{e, r}
		}
	}
	return e, err
}

func (p *markerParser) and() (markerExpr, error) {
	e, err := p.atom()
	for err == nil && p.peek() == "and" {
		p.i++
		var r markerExpr
		if r, err = p.atom(); err == nil {
			e = markerAnd{e, r}
		}
	}
	return e, err
}

func (p *markerParser) atom() (markerExpr, error) {
	if p.peek() == "(" {
		p.i++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errors.New("a ( without its )")
		}
		p.i++
		return e, nil
	}
	l, lv, err := p.value()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	p.i++
	switch op {
	case "==", "!=", "~=", "<=", ">=", "<", ">", "===", "in":
	case "not":
		if p.peek() != "in" {
			return nil, errors.New("not without in")
		}
		p.i++
		op = "not in"
	default:
		return nil, fmt.Errorf("%q is not a comparison", op)
	}
	r, rv, err := p.value()
	if err != nil {
		return nil, err
	}
	return markerCmp{left: l, op: op, right: r, leftVar: lv, rightVar: rv}, nil
}

func (p *markerParser) value() (string, bool, error) {
	t := p.peek()
	p.i++
	switch {
	case t == "":
		return "", false, errors.New("it ends early")
	case t[0] == '\'' || t[0] == '"':
		return t[1 : len(t)-1], false, nil
	case markerVars[t]:
		if a, ok := markerAliases[t]; ok {
			t = a
		}
		return t, true, nil
	}
	return "", false, fmt.Errorf("%q is not a marker variable", t)
}
