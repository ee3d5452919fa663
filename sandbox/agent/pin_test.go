//go:build linux && amd64

package agent

import (
	"testing"
	"time"
)

// TestPinRates: the tasks are pinned from 1,000 stops a second (200
// fork+exec+exits) and freed under 250, so a rate between the two keeps
// whichever state it found (no flapping).
func TestPinRates(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		n, dt, rate int64
		want        bool
	}{
		{9, 9 * ms, pinRate, true},  // 1,000/s: pinned
		{8, 9 * ms, pinRate, false}, // 889/s
		{1000, 1000 * ms, pinRate, true},
		{5, int64(unpinAfter), pinRate / 4, true},  // 250/s: kept
		{4, int64(unpinAfter), pinRate / 4, false}, // 200/s: freed
		{6, 9 * ms, pinRate, false},                // 667/s: not pinned...
		{6, 9 * ms, pinRate / 4, true},             // ...nor freed once pinned
		{1, 0, pinRate, false},                     // no time: no rate
	} {
		if got := often(tc.n, tc.dt, tc.rate); got != tc.want {
			t.Errorf("%d stops in %v at %d/s: %v, want %v", tc.n, time.Duration(tc.dt), tc.rate, got, tc.want)
		}
	}
}
