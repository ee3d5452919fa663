package sandbox

import (
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestSeedTimesFollowTheDrawnAges: each planted file is as old as its
// drawn age, to the second, and each directory as old as its youngest
// file; the run's bait gives its files more than one time.
func TestSeedTimesFollowTheDrawnAges(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 500, time.UTC)
	times := seedTimes([]probes.SeedFile{
		{Path: "/workspace/p/a.md", Age: 3 * time.Hour},
		{Path: "/workspace/p/src/b.js", Age: 2 * time.Hour},
		{Path: "/home/sandbox/.aws/credentials", Age: 5 * time.Hour},
	}, now)
	base := now.Truncate(time.Second)
	for p, age := range map[string]time.Duration{
		"/workspace/p/a.md": 3 * time.Hour, "/workspace/p/src/b.js": 2 * time.Hour, "/workspace/p/src": 2 * time.Hour,
		"/workspace/p": 2 * time.Hour, "/home/sandbox/.aws": 5 * time.Hour,
	} {
		if want := base.Add(-age); !times[p].Equal(want) {
			t.Errorf("%s: %s, want %s", p, times[p], want)
		}
	}
	distinct := map[time.Time]bool{}
	for _, tm := range seedTimes(probes.NewBait(3).Seeds(), now) {
		distinct[tm] = true
	}
	if len(distinct) < 5 {
		t.Errorf("the bait's files have %d distinct times", len(distinct))
	}
}
