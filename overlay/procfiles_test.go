package overlay

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseSharedMappings(t *testing.T) {
	f, err := os.Open("testdata/maps.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseSharedMappings(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x7fd7eee00000, End: 0x7fd7eee20000, Perms: "rw-s", Major: 0, Minor: 1, Inode: 4096, Path: "/dev/zero (deleted)"},
		{Start: 0x7fd7eee76000, End: 0x7fd7eee77000, Perms: "rw-s", Major: 0, Minor: 0x34, Inode: 778783, Path: "/etc/passwd"},
		{Start: 0x7fd7eee78000, End: 0x7fd7eee79000, Perms: "r--s", Major: 0, Minor: 0x34, Inode: 2261547, Path: "/workspace/a file with spaces.txt"},
		{Start: 0x7fd7eee7a000, End: 0x7fd7eee7b000, Perms: "-w-s", Major: 0, Minor: 0x35, Inode: 42, Path: "/workspace/gone (deleted)"},
		{Start: 0x7fd7eee7c000, End: 0x7fd7eee7d000, Perms: "rw-s", Major: 0, Minor: 0x34, Inode: 99, Path: `/tmp/new\012line`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if !got[1].Writable() || got[2].Writable() || !got[3].Writable() {
		t.Error("Writable reads the perms' second letter")
	}
	if n := got[1].MapFilesName(); n != "7fd7eee76000-7fd7eee77000" {
		t.Errorf("MapFilesName = %q", n)
	}
}

func TestParseSharedMappingsRefusesGarbage(t *testing.T) {
	for _, in := range []string{
		"7f-7g rw-s 00000000 00:34 1 /x\n",
		"7f rw-s 00000000 00:34 1 /x\n",
		"7f-80 rw-s 00000000 0034 1 /x\n",
		"7f-80 rw-s 00000000 00:34 x /x\n",
		"7f-80 rw-s\n",
		"7f-80 rw-s 0 00:34 1 " + strings.Repeat("a", maxMapsLine) + "\n",
	} {
		if _, err := ParseSharedMappings(strings.NewReader(in)); err == nil {
			t.Errorf("%.40q: no error", in)
		}
	}
}

func TestParseFdinfoWritable(t *testing.T) {
	for name, want := range map[string]bool{"fdinfo-rdwr.txt": true, "fdinfo-wronly-append.txt": true, "fdinfo-rdonly.txt": false, "fdinfo-path-like.txt": false} {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseFdinfoWritable(f)
		f.Close()
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
	f, err := os.Open("testdata/fdinfo-noflags.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ParseFdinfoWritable(f); err == nil {
		t.Error("no flags line: no error")
	}
}
