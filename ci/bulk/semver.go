package bulk

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Satisfies says whether version v (X.Y.Z, a prerelease allowed) is in
// the npm range r. Prereleases compare by semver precedence, as in npm's
// engines check (it passes includePrerelease). An error says the range
// was not understood.
func Satisfies(v, r string) (bool, error) {
	ver, err := semver.StrictNewVersion(strings.TrimPrefix(strings.TrimSpace(v), "v"))
	if err != nil {
		return false, fmt.Errorf("version %q: want X.Y.Z", v)
	}
	// npm reads an empty alternative (">=18 ||", " ") as any version; the
	// library refuses it.
	alts := strings.Split(r, "||")
	for i, a := range alts {
		if strings.TrimSpace(a) == "" {
			alts[i] = "*"
		}
	}
	c, err := semver.NewConstraint(strings.Join(alts, "||"))
	if err != nil {
		return false, fmt.Errorf("range %q: %w", r, err)
	}
	c.IncludePrerelease = true
	return c.Check(ver), nil
}
