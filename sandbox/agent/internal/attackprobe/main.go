//go:build linux && amd64

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func run(mode string, args []string) int {
	switch mode {
	case "memfd-swap":
		// A memfd stays writable through a shared mapping made before its
		// exec, and a write there changes neither its size nor its times:
		// its stat, the agent's cache key, stays the same. It runs
		// program X (args[0]) once, then its bytes become program Z
		// (args[1]) and it runs again.
		x, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Println(err)
			return 1
		}
		z, err := os.ReadFile(args[1])
		if err != nil {
			fmt.Println(err)
			return 1
		}
		n := (max(len(x), len(z)) + 4095) &^ 4095
		fd, err := unix.MemfdCreate("swap", 0)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if err := unix.Ftruncate(fd, int64(n)); err != nil {
			fmt.Println(err)
			return 1
		}
		m, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		copy(m, x) // every page faulted in, writable, from now on
		if bytesEqualPadded(x, z) {
			z = append(append([]byte(nil), z...), make([]byte, n-len(z))...)
			z[n-1] ^= 1
		}
		path := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)
		var before, after unix.Stat_t
		unix.Fstat(fd, &before)
		fmt.Println("sum1", sum(m))
		fmt.Println("code1", code(exec.Command(path).Run()))
		clear(m)
		copy(m, z)
		unix.Fstat(fd, &after)
		fmt.Println("samestat", before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim)
		fmt.Println("sum2", sum(m))
		fmt.Println("code2", code(exec.Command(path).Run()))
	case "thread-exec-chain":
		// The leader runs fresh program args[0] (hashed while it runs),
		// which at once has a non-leader thread exec args[1]: see
		// thread-exec.
		fmt.Println(code(exec.Command(args[0], append([]string{"thread-exec"}, args[1:]...)...).Run()))
	case "thread-exec":
		// A non-leader thread becomes args[0] args[1:].
		runtime.LockOSThread()
		done := make(chan error)
		go func() {
			runtime.LockOSThread()
			done <- syscall.Exec(args[0], args, os.Environ())
		}()
		fmt.Println(<-done)
		return 1
	case "kill-mid-hash":
		// Runs fresh program args[0] (big: its hash takes a while), which
		// kills itself at once.
		err := exec.Command(args[0], "self-kill").Run()
		fmt.Println("killed", err)
	case "self-kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "pin-after-burst":
		// A burst of execs (the tasks pinned), with a thread and a child
		// started in the middle of it that live on; once the stops have
		// been rare for a while, the CPUs each task of the server, and
		// each thread of the agent (its parent), may run on.
		done := make(chan struct{})
		for i := range 400 {
			exec.Command("true").Run()
			if i == 200 {
				printTasks("mid", os.Getpid())
				go func() {
					runtime.LockOSThread()
					<-done
				}()
				c := exec.Command(os.Args[0], "pin-child", args[0])
				out, _ := c.StdoutPipe()
				in, _ := c.StdinPipe()
				c.Start()
				// The child looks when told: after the burst and the quiet
				// stretch, however slow the burst was.
				defer func() { in.Close(); b, _ := io.ReadAll(out); fmt.Print(string(b)); c.Wait() }()
			}
		}
		time.Sleep(300 * time.Millisecond)
		all := args[0] // the CPUs the tasks may run on once freed
		printFreed("server", os.Getpid(), all)
		printFreed("agent", os.Getppid(), all)
		close(done)
	case "pin-child":
		io.Copy(io.Discard, os.Stdin)
		printFreed("child", os.Getpid(), args[0])
	case "untraced":
		// A child made with CLONE_UNTRACED: no tracer may follow it. It
		// says so on stdout and ends with code 7.
		msg := []byte("untraced child says hello\n")
		syscall.ForkLock.Lock()
		pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.CLONE_UNTRACED|syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if errno == 0 && pid == 0 {
			syscall.RawSyscall(syscall.SYS_WRITE, 1, uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 7, 0, 0)
		}
		syscall.ForkLock.Unlock()
		if errno != 0 {
			fmt.Println("clone", errno)
			return 1
		}
		var ws syscall.WaitStatus
		syscall.Wait4(int(pid), &ws, 0, nil)
		fmt.Println("child", pid, ws.ExitStatus())
	case "chmod-race":
		// Fresh copies of itself, each made unreadable (0111) as soon as
		// its exec is past the point where the kernel decides the process
		// stays dumpable: the agent, the same uid without capabilities,
		// can still read /proc/PID/exe's link and stat it, but not open it
		// to hash it.
		self, _ := os.Executable()
		b, err := os.ReadFile(self)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		dir, err := os.MkdirTemp("", "attack-chmod-")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer os.RemoveAll(dir)
		for i := range 20 {
			p := fmt.Sprintf("%s/prog%d", dir, i)
			if err := os.WriteFile(p, b, 0o755); err != nil {
				fmt.Println(err)
				return 1
			}
			c := exec.Command(p, "noop")
			if err := c.Start(); err != nil {
				fmt.Println(err)
				return 1
			}
			os.Chmod(p, 0o111)
			c.Wait()
			fmt.Println("prog", p)
		}
	case "exec-into":
		// Becomes args[0] args[1:], in the same process.
		fmt.Println(syscall.Exec(args[0], args, os.Environ()))
		return 1
	case "many-fresh":
		// For each pair of programs (args), at once: a child runs the
		// first, which becomes the second.
		errs := make(chan error)
		for i := 0; i+1 < len(args); i += 2 {
			go func(a, b string) { errs <- exec.Command(a, "exec-into", b, "noop").Run() }(args[i], args[i+1])
		}
		bad := 0
		for i := 0; i+1 < len(args); i += 2 {
			if err := <-errs; err != nil {
				fmt.Println(err)
				bad++
			}
		}
		fmt.Println("failed", bad)
	case "chmod-self":
		// Changes its own file's metadata only, at once, while running:
		// chmod to the mode it has (no write: the file stays the same).
		self, err := os.Executable()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fi, err := os.Stat(self)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("chmod", os.Chmod(self, fi.Mode().Perm()))
	case "prlimit-agent":
		// The agent (its parent) runs as the same uid: prlimit lets this
		// process lower its RLIMIT_NOFILE, no capability needed, and
		// PR_SET_DUMPABLE does not stop it. With only a few descriptors
		// left to it, the agent runs each program given (fresh files).
		agent := os.Getppid()
		var old unix.Rlimit
		if err := unix.Prlimit(agent, unix.RLIMIT_NOFILE, nil, &old); err != nil {
			fmt.Println("prlimit", err)
			return 1
		}
		for i, p := range args {
			lim := unix.Rlimit{Cur: uint64(3 + i), Max: old.Max}
			if err := unix.Prlimit(agent, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
				fmt.Println("prlimit", err) // refused: run the program all the same
			}
			err := exec.Command(p, "noop").Run()
			fmt.Println("prog", p, lim.Cur, err)
		}
		unix.Prlimit(agent, unix.RLIMIT_NOFILE, &old, nil)
	case "deep":
		// Runs a fresh copy of itself from a directory whose path is
		// longer than PATH_MAX (made one relative step at a time): the
		// kernel cannot name the program or the directory in /proc, but
		// the program is an ordinary readable file.
		self, _ := os.Executable()
		b, err := os.ReadFile(self)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		top, err := os.MkdirTemp("", "attack-deep-")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer os.RemoveAll(top)
		if err := os.Chdir(top); err != nil {
			fmt.Println(err)
			return 1
		}
		name := strings.Repeat("d", 250)
		for range 20 {
			if err := os.Mkdir(name, 0o755); err != nil {
				fmt.Println(err)
				return 1
			}
			if err := os.Chdir(name); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		if err := os.WriteFile("prog", b, 0o755); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("sum", sum(b))
		fmt.Println("run", code(exec.Command("./prog", "noop").Run()))
		os.Chdir("/")
	case "noop":
	}
	return 0
}

// printTasks prints the CPUs each thread of pid may run on.
func printTasks(who string, pid int) {
	for tid, cpus := range tasksCPUs(pid) {
		fmt.Println(who, tid, cpus)
	}
}

// tasksCPUs is the CPU list each task of pid may run on, by tid.
func tasksCPUs(pid int) map[string]string {
	out := map[string]string{}
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, d := range dirs {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, d.Name()))
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[d.Name()] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// printFreed prints pid's tasks once each may run on all, or as they are
// after freeBound. The pinner frees the tasks a moment after the stops
// turn rare, as it sees them: on a loaded machine the tracer takes the
// stops it was late for in a batch, which reads as a burst and pins the
// tasks again for a while. Stuck pinned is what this tells, not how soon.
func printFreed(who string, pid int, all string) {
	const freeBound = 5 * time.Second
	for end := time.Now().Add(freeBound); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		free := true
		for _, cpus := range tasksCPUs(pid) {
			free = free && cpus == all
		}
		if free {
			break
		}
	}
	printTasks(who, pid)
}

func bytesEqualPadded(a, b []byte) bool {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		var x, y byte
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}

func code(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	fmt.Println(err)
	return -1
}
