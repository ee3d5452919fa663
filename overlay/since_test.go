//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestChangedSinceSeesEveryKindOfEdit: a file written, one made, one
// removed (its directory shows), one chmod'ed, a rename; nothing else.
func TestChangedSinceSeesEveryKindOfEdit(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "a/b", "c"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"a/x", "a/b/y", "c/z", "c/gone", "keep"} {
		os.WriteFile(filepath.Join(root, f), []byte(f), 0o644)
	}
	time.Sleep(20 * time.Millisecond) // ctime is coarse: the edits must come after since
	since := time.Now().UnixNano()
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(filepath.Join(root, "a/b/y"), []byte("edited"), 0o644)
	os.Chmod(filepath.Join(root, "keep"), 0o600)
	os.Remove(filepath.Join(root, "c/gone"))
	paths, n, err := ChangedSince(root, since, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/a/b/y", "/c", "/keep"}
	if !reflect.DeepEqual(paths, want) || n != len(want) {
		t.Fatalf("ChangedSince = %v (%d), want %v", paths, n, want)
	}
	if paths, n, _ := ChangedSince(root, since, 1); len(paths) != 1 || n != 3 {
		t.Fatalf("bounded: %v (%d)", paths, n)
	}
}
