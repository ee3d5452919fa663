package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: the version says the revision built, and whether the
// tree was dirty.
func TestBuildVersion(t *testing.T) {
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "(devel)"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "0b7bd0c1a2b3c4d5"}, {Key: "vcs.modified", Value: "false"}}, "(devel) (0b7bd0c1a2b3)"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "0b7bd0c1a2b3c4d5"}, {Key: "vcs.modified", Value: "true"}}, "(devel) (0b7bd0c1a2b3+dirty)"},
	} {
		if got := buildVersion("(devel)", c.settings); got != c.want {
			t.Errorf("%v: %q, want %q", c.settings, got, c.want)
		}
	}
	// Go's pseudo-version of a build from a clone names the revision.
	pseudo := "v0.0.0-20261204221414-0b7bd0c1a2b3+dirty"
	if got := buildVersion(pseudo, []debug.BuildSetting{{Key: "vcs.revision", Value: "0b7bd0c1a2b3c4d5"}, {Key: "vcs.modified", Value: "true"}}); got != pseudo {
		t.Errorf("pseudo-version: %q", got)
	}
}
