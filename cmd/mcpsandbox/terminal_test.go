package main

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIsTerminal: a pseudo-terminal is one; /dev/null (read or written),
// a character device too, and a pipe are not, so that a scan whose stdout
// goes to /dev/null does not pick the text format.
func TestIsTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY} {
		null, err := os.OpenFile(os.DevNull, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		if isTerminal(null) {
			t.Errorf("/dev/null (flags %#x) taken for a terminal", flag)
		}
		null.Close()
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) || isTerminal(w) {
		t.Error("a pipe taken for a terminal")
	}
}
