//go:build linux

package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// heldHelperEnv makes the test binary a process that holds files: it maps
// $dir/mapped shared (writable) and $dir/mapped-ro shared read-only, keeps
// $dir/open open O_RDWR and $dir/read open O_RDONLY, maps $dir/linked
// (whose name it then deletes, another link remaining) and $dir/gone
// (deleted, no link left), forks a child that keeps $dir/child open for
// writing, says "ready" and waits for stdin to close.
const heldHelperEnv = "MCPSANDBOX_TEST_HELD_HELPER"

func init() {
	dir := os.Getenv(heldHelperEnv)
	if dir == "" {
		return
	}
	if os.Getenv(heldHelperEnv+"_CHILD") == "1" {
		f, err := os.OpenFile(filepath.Join(dir, "child"), os.O_WRONLY, 0)
		if err != nil {
			os.Exit(3)
		}
		defer f.Close()
		os.Stdout.WriteString("ready\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	mapFile := func(name string, prot int) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
		if err != nil {
			os.Exit(2)
		}
		if _, err := syscall.Mmap(int(f.Fd()), 0, 4, prot, syscall.MAP_SHARED); err != nil {
			os.Exit(2)
		}
		f.Close()
	}
	mapFile("mapped", syscall.PROT_READ|syscall.PROT_WRITE)
	mapFile("mapped-ro", syscall.PROT_READ)
	mapFile("linked", syscall.PROT_READ|syscall.PROT_WRITE)
	mapFile("gone", syscall.PROT_READ|syscall.PROT_WRITE)
	os.Remove(filepath.Join(dir, "linked"))
	os.Remove(filepath.Join(dir, "gone"))
	open, _ := os.OpenFile(filepath.Join(dir, "open"), os.O_RDWR, 0)
	read, _ := os.Open(filepath.Join(dir, "read"))
	defer open.Close()
	defer read.Close()
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), heldHelperEnv+"_CHILD=1")
	child.Stderr = os.Stderr
	in, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		os.Exit(4)
	}
	bufio.NewReader(out).ReadString('\n')
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	in.Close()
	child.Wait()
	os.Exit(0)
}

// TestHeldFilesFound: the look finds what a process tree holds on the
// watched file system by path (shared mappings, writable or not, and
// descriptors open for writing, a child's too), leaves out what it only
// reads and what has no name left, and says "unplaced" for a held file
// whose name is gone while another link remains.
func TestHeldFilesFound(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading another process's map_files needs root")
	}
	dir := t.TempDir()
	for _, n := range []string{"mapped", "mapped-ro", "linked", "gone", "open", "read", "child"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, func()) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), heldHelperEnv+"="+dir)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper said %q", line)
		}
		return cmd, func() { in.Close(); cmd.Wait() }
	}
	cmd, stop := start()
	defer stop()
	h, err := newHeldFiles(cmd.Process.Pid, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.look()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range got.paths {
		if strings.HasPrefix(p, dir+"/") {
			paths = append(paths, strings.TrimPrefix(p, dir+"/"))
		}
	}
	sort.Strings(paths)
	if want := []string{"child", "mapped", "mapped-ro", "open"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("held %q, want %q", paths, want)
	}
	if !got.unplaced {
		t.Error("a mapped file whose name was deleted, another link remaining, is not unplaced")
	}
	// Past the bound on what a look examines, the look is unplaced (every
	// file is verified). Watching no file system, nothing else is.
	blind := &heldFiles{pid1: h.pid1, pidns: h.pidns, devs: map[uint64]bool{}, maxEntries: maxHeldEntries}
	if got, err := blind.look(); err != nil || got.unplaced || len(got.paths) != 0 {
		t.Fatalf("watching nothing: %+v, %v", got, err)
	}
	blind.maxEntries = 2
	if got, err := blind.look(); err != nil || !got.unplaced {
		t.Errorf("past the bound: %+v, %v", got, err)
	}
	stop()
	// The processes gone (as at teardown), nothing is held and the look
	// is no error.
	got, err = h.look()
	if err != nil || len(got.paths) != 0 || got.unplaced {
		t.Errorf("after the processes ended: %+v, %v", got, err)
	}
}

// BenchmarkHeldLook: one look at a Node.js process (the runtime's
// threads, its descriptors and mappings), as each snapshot takes two.
func BenchmarkHeldLook(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("no node")
	}
	cmd := exec.Command(node, "-e", "setInterval(() => {}, 1000)")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	h, err := newHeldFiles(cmd.Process.Pid, "/")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.look(); err != nil {
			b.Fatal(err)
		}
	}
}
