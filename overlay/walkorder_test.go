//go:build linux

package overlay

import "testing"

// TestWalkedBefore: the order walkFirst meets paths in, as a comparison.
func TestWalkedBefore(t *testing.T) {
	first := []string{"/workspace", "/home"}
	for _, tc := range []struct {
		p, last string
		want    bool
	}{
		{"/workspace/a", "/tmp/x", true}, // a first subtree before the rest
		{"/home/s/.bashrc", "/tmp/x", true},
		{"/tmp/y", "/tmp/x", false},
		{"/tmp/w", "/tmp/x", true},
		{"/a.c", "/a/b", false}, // component order: "a" < "a.c"
		{"/a/b", "/a.c", true},
		{"/home/s", "/workspace/z", false}, // the second subtree after the first
		{"/workspace/z", "/home/s", true},
		{"/tmp", "/home/x", false},
	} {
		if got := walkedBefore(first, tc.p, tc.last); got != tc.want {
			t.Errorf("walkedBefore(%s, %s) = %v, want %v", tc.p, tc.last, got, tc.want)
		}
	}
}
