package sandbox

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
