package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Policy is what a team decides on top of the rules.
type Policy struct {
	// Rules maps a rule id to a severity (critical, error, warning, note)
	// or "off".
	Rules map[string]Override `json:"rules,omitempty" yaml:"rules"`
	// Ignore drops findings or evidence; every drop is counted in the
	// report's ignored list.
	Ignore Ignore `json:"ignore,omitempty" yaml:"ignore"`
	// AllowedHosts are names or addresses (globs) a closed-world tool may
	// reach without a finding.
	AllowedHosts []string `json:"allowedHosts,omitempty" yaml:"allowedHosts"`
	// Coverage asks for a share of the tools to be exercised.
	Coverage CoveragePolicy `json:"coverage,omitzero" yaml:"coverage"`
	// Run is what `mcpsandbox run` does about findings (log, correct,
	// deny); scan does not read it.
	Run RunPolicy `json:"run,omitzero" yaml:"run"`
}

// CoveragePolicy is what a policy asks of coverage.
type CoveragePolicy struct {
	// Min is the share of listed tools (0 to 1) that must be exercised: a
	// tool with a call that returned a result that is not an error (see
	// report.Coverage). Below it, a coverage-low finding (error). 0, the
	// default, asks nothing.
	Min float64 `json:"min,omitempty" yaml:"min"`
}

// CheckMinCoverage refuses a minimum outside 0 to 1 (80% is 0.8).
func CheckMinCoverage(min float64) error {
	if !(min >= 0 && min <= 1) {
		return fmt.Errorf("coverage minimum %v is not between 0 and 1 (80%% is 0.8)", min)
	}
	return nil
}

// Override is what a policy sets a rule to: a severity, or off.
type Override struct {
	Severity report.Severity
	Off      bool
}

// off is the policy's word for a rule that raises nothing.
const off = "off"

// ParseOverride reads a severity's name or "off".
func ParseOverride(s string) (Override, error) {
	if s == off {
		return Override{Off: true}, nil
	}
	sev, err := report.ParseSeverity(s)
	if err != nil {
		return Override{}, fmt.Errorf("%w, or %s", err, off)
	}
	return Override{Severity: sev}, nil
}

// String is the override as a policy file writes it.
func (o Override) String() string {
	if o.Off {
		return off
	}
	return o.Severity.String()
}

// MarshalText writes the override as a policy file does.
func (o Override) MarshalText() ([]byte, error) {
	if o.Off {
		return []byte(off), nil
	}
	return o.Severity.MarshalText()
}

// UnmarshalText reads an override from a policy file (YAML or JSON).
func (o *Override) UnmarshalText(b []byte) error {
	v, err := ParseOverride(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// Ignore lists globs: "*" stays within a path segment, "**" crosses them.
type Ignore struct {
	Paths []string `json:"paths,omitempty" yaml:"paths"`
	Tools []string `json:"tools,omitempty" yaml:"tools"`
	// Rules scope ignores to one rule each.
	Rules []RuleIgnore `json:"rules,omitempty" yaml:"rules"`
}

// RuleIgnore ignores one rule's findings on matching tools and/or paths.
type RuleIgnore struct {
	Rule  string   `json:"rule" yaml:"rule"`
	Tools []string `json:"tools,omitempty" yaml:"tools"`
	Paths []string `json:"paths,omitempty" yaml:"paths"`
}

// LoadPolicy reads a policy file, YAML or JSON (JSON is YAML too), and
// refuses unknown fields, rules and severities: a typo must not silently
// weaken the gate.
func LoadPolicy(path string) (Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, fmt.Errorf("reading policy: %w", err)
	}
	var p Policy
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && err.Error() != "EOF" {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	if err := p.check(); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

func (p Policy) check() error {
	if err := CheckMinCoverage(p.Coverage.Min); err != nil {
		return err
	}
	if err := p.Run.check(); err != nil {
		return err
	}
	for id, sev := range p.Rules {
		if _, ok := ByID(id); !ok {
			return fmt.Errorf("unknown rule %q", id)
		}
		if !sev.Off && sev.Severity == 0 {
			return fmt.Errorf("rule %s: no severity", id)
		}
	}
	for _, ri := range p.Ignore.Rules {
		if _, ok := ByID(ri.Rule); !ok {
			return fmt.Errorf("ignore: unknown rule %q", ri.Rule)
		}
	}
	for _, g := range append(append(append([]string{}, p.Ignore.Paths...), p.Ignore.Tools...), p.AllowedHosts...) {
		if _, err := globRegexp(g); err != nil {
			return fmt.Errorf("glob %q: %w", g, err)
		}
	}
	return nil
}

// String is the policy as JSON, for tests and docs.
func (p Policy) String() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Apply applies the policy to every finding, whatever raised it: a rule
// turned off or a tool ignored drops the finding, a path ignored drops the
// evidence items that name it (and the finding when none are left), and a
// rule's severity replaces the default. Each drop is counted in the
// ignored list: nothing goes silently.
func (p Policy) Apply(findings []report.Finding) ([]report.Finding, []report.Ignored) {
	kept, ignored := []report.Finding{}, []report.Ignored{}
	for _, f := range findings {
		k, ig, ok := p.apply(f)
		ignored = append(ignored, ig...)
		if ok {
			kept = append(kept, k)
		}
	}
	return kept, ignored
}

// offReason is the ignored reason of a finding whose rule is off.
const offReason = "rule " + off

func (p Policy) apply(f report.Finding) (report.Finding, []report.Ignored, bool) {
	ignored := func(reason string, n int) report.Ignored {
		return report.Ignored{Rule: f.Rule, Tool: f.Tool, Call: f.Call, Reason: reason, Evidence: n}
	}
	o, set := p.Rules[f.Rule]
	if set && o.Off {
		return f, []report.Ignored{ignored(offReason, len(f.Evidence))}, false
	}
	if g, ok := p.ignoredTool(f.Rule, f.Tool); ok {
		return f, []report.Ignored{ignored("tool "+g, len(f.Evidence))}, false
	}
	f, dropped := p.trimPaths(f)
	var out []report.Ignored
	for _, g := range sortedKeys(dropped) {
		out = append(out, ignored("path "+g, dropped[g]))
	}
	if len(dropped) > 0 && len(f.Evidence) == 0 {
		return f, out, false
	}
	if set {
		f.Severity = o.Severity
	}
	return f, out, true
}

// TrimPaths returns f without the evidence items the policy's path
// ignores match (maybe none left), its message counting what is left.
func (p Policy) TrimPaths(f report.Finding) report.Finding {
	t, _ := p.trimPaths(f)
	return t
}

// trimPaths drops the evidence items whose path a path ignore matches; it
// returns the finding left and how many items each glob dropped.
func (p Policy) trimPaths(f report.Finding) (report.Finding, map[string]int) {
	dropped := map[string]int{}
	ev, paths := []string{}, []string{}
	for i, e := range f.Evidence {
		path := ""
		if i < len(f.EvidencePaths) {
			path = f.EvidencePaths[i]
		}
		if path != "" {
			if g, ok := p.ignoredPath(f.Rule, f.Tool, path); ok {
				dropped[g]++
				continue
			}
		}
		ev, paths = append(ev, e), append(paths, path)
	}
	if len(dropped) == 0 {
		return f, nil
	}
	f.Evidence, f.EvidencePaths = ev, paths
	if rl, ok := ByID(f.Rule); ok && (rl.Message != "" || rl.ServerMessage != "") {
		f.Message = message(rl, f)
	}
	return f, dropped
}

// ignoredTool matches a tool ignore, or a rule's ignore that names tools
// and no paths. A server-level finding (no tool) has no tool to ignore.
func (p Policy) ignoredTool(rule, tool string) (string, bool) {
	if tool == "" {
		return "", false
	}
	for _, g := range p.Ignore.Tools {
		if glob(g, tool) {
			return g, true
		}
	}
	for _, ri := range p.Ignore.Rules {
		if ri.Rule == rule && len(ri.Paths) == 0 {
			for _, g := range ri.Tools {
				if glob(g, tool) {
					return g + " (rule " + rule + ")", true
				}
			}
		}
	}
	return "", false
}

// ignoredPath matches a path ignore, or a rule's path ignore on a tool it
// names (any tool when it names none).
func (p Policy) ignoredPath(rule, tool, path string) (string, bool) {
	for _, g := range p.Ignore.Paths {
		if glob(g, path) {
			return g, true
		}
	}
	for _, ri := range p.Ignore.Rules {
		if ri.Rule != rule || (len(ri.Tools) > 0 && !anyGlob(ri.Tools, tool)) {
			continue
		}
		for _, g := range ri.Paths {
			if glob(g, path) {
				return g + " (rule " + rule + ")", true
			}
		}
	}
	return "", false
}

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if glob(g, s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// glob matches s against a glob where "*" does not cross "/" and "**"
// does; for hosts and tool names, which have no "/", "*" is any run.
func glob(g, s string) bool {
	re, err := compiledGlob(g)
	return err == nil && re.MatchString(s)
}

// globs memoizes compiled globs: a verdict matches every listed path
// against each shell and credential glob (some 70 with the homes), and
// compiling them for every path made the verdict of a report with
// thousands of paths take seconds, each time the report bound asks for
// a verdict again. The globs come from this package and the policy, so
// the memo stays as small as they are; it is a cache, never state a
// result depends on.
var globs sync.Map // string -> globEntry

type globEntry struct {
	re  *regexp.Regexp
	err error
}

func compiledGlob(g string) (*regexp.Regexp, error) {
	if e, ok := globs.Load(g); ok {
		return e.(globEntry).re, e.(globEntry).err
	}
	re, err := globRegexp(g)
	globs.Store(g, globEntry{re, err})
	return re, err
}

func globRegexp(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '*' && i+1 < len(g) && g[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
