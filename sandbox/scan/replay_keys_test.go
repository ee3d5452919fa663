package scan

import (
	"reflect"
	"testing"
)

// TestReproducedComparesRunSpecificNamesAlike: an effect made under a new
// random name on each run (a browser's profile directory) is reproduced
// when the replay made it again under another name, and not when the
// control made one too; a different effect is not.
func TestReproducedComparesRunSpecificNamesAlike(t *testing.T) {
	orig := []string{
		"file created /tmp/puppeteer_dev_chrome_profile-jgKl5H",
		"file created /workspace/a.txt",
		"file modified /home/sandbox/.log",
	}
	with := map[string]bool{
		"file created /tmp/puppeteer_dev_chrome_profile-Ab3xYz": true,
		"file created /workspace/b.txt":                         true,
		"file modified /home/sandbox/.log":                      true,
	}
	got := reproduced(orig, with, map[string]bool{})
	if want := []string{"file created /tmp/puppeteer_dev_chrome_profile-jgKl5H", "file modified /home/sandbox/.log"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reproduced %q, want %q", got, want)
	}
	got = reproduced(orig, with, map[string]bool{"file created /tmp/puppeteer_dev_chrome_profile-Qw9ErT": true})
	if want := []string{"file modified /home/sandbox/.log"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with the control's own profile: reproduced %q, want %q", got, want)
	}
}

// TestReproducedComparesContentAddressedObjectsAlike: a commit made again
// by the replay is a new object under a new hash, and so under another
// fan-out directory (.git/objects/0e against .git/objects/46): the same
// effect, reproduced; one the control made too is not; a directory of
// another name is another effect.
func TestReproducedComparesContentAddressedObjectsAlike(t *testing.T) {
	orig := []string{
		"file created /workspace/p/.git/objects/0e",
		"file created /workspace/p/.git/objects/0e/e08e7e8a977df0d8124a7dead2c4f9b1c89642",
		"file created /workspace/p/de",
	}
	with := map[string]bool{
		"file created /workspace/p/.git/objects/46":                                        true,
		"file created /workspace/p/.git/objects/46/02e8031b4a9f50ec9c61f17a01c7c37d3e06fa": true,
		"file created /workspace/p/fr":                                                     true,
	}
	got := reproduced(orig, with, map[string]bool{})
	want := []string{
		"file created /workspace/p/.git/objects/0e",
		"file created /workspace/p/.git/objects/0e/e08e7e8a977df0d8124a7dead2c4f9b1c89642",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reproduced %q, want %q", got, want)
	}
	got = reproduced(orig, with, map[string]bool{"file created /workspace/p/.git/objects/ab/cdef0123456789abcdef0123456789abcdef01": true})
	if want := []string{"file created /workspace/p/.git/objects/0e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with the control's own object: reproduced %q, want %q", got, want)
	}
	if a, b := replayKey("file created /x/ab"), replayKey("file created /x/AB"); a == b {
		t.Errorf("an upper-case name is no fan-out directory: %q and %q alike", a, b)
	}
}
