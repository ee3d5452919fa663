//go:build linux && amd64

package agent

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// task is one traced thread.
type task struct {
	tgid int
	// exit is the syscall whose exit stop was asked for, with what to do
	// there.
	exit    *pending
	started bool // its initial SIGSTOP was consumed
}

// sysSocketKind marks a pending socket(): recorded, never emitted.
const sysSocketKind = "socket"

// pending is an event finished at the syscall's exit.
type pending struct {
	ev      *Event
	restore []byte // original sockaddr, after a sinkhole rewrite
	addrPtr uint64
	fd      int
}

// process is one traced thread group.
type process struct {
	ppid int
	// reported is set once the runner knows of it: by its fork event, or by
	// its exec for the server itself. Only then is its exit reported.
	reported bool
	// dests remembers connected destinations by fd, for DNS payloads sent
	// with send() on a connected socket.
	dests map[int]*Event
	binds map[int]*Event
	// socks holds the protocol of the inet sockets it made, by fd.
	socks map[int]string
	// exitSent is set once its exit was reported at PTRACE_EVENT_EXIT.
	exitSent bool
}

func newProcess(ppid int) *process {
	return &process{ppid: ppid, dests: map[int]*Event{}, binds: map[int]*Event{}, socks: map[int]string{}}
}

type tracer struct {
	main  int
	mode  string
	out   *writer
	tasks map[int]*task
	procs map[int]*process
	// early holds the tasks seen on their own stops (or ending) before
	// their creator's fork, vfork or clone event: that event must not
	// report them again, even when they are gone by then.
	early map[int]bool
	// seen dedups connect events per process and destination.
	seen map[string]bool
}

func newTracer(main int, mode string, out *writer) *tracer {
	return &tracer{main: main, mode: mode, out: out, tasks: map[int]*task{main: {tgid: main, started: true}},
		procs: map[int]*process{main: newProcess(1)}, early: map[int]bool{}, seen: map[string]bool{}}
}

// TRACEEXIT stops a process on its way out, before its parent can learn
// of it: the exit event is sent before a tool that waited for the process
// can answer, so it lands on the right call.
const ptraceOptions = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACESYSGOOD |
	unix.PTRACE_O_TRACEEXIT

// loop follows every task until none is left and returns the main
// process's exit code.
func (t *tracer) loop() int {
	var ws unix.WaitStatus
	// The child stops at its first exec (PTRACE_TRACEME), before the filter.
	if _, err := unix.Wait4(t.main, &ws, unix.WALL, nil); err != nil {
		t.out.errorf("waiting for the server to start: %v", err)
		return 127
	}
	if err := unix.PtraceSetOptions(t.main, ptraceOptions); err != nil {
		t.out.errorf("setting ptrace options: %v", err)
	}
	unix.PtraceCont(t.main, 0)
	code := -1
	for {
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break // ECHILD: nothing left
		}
		switch {
		case ws.Exited() || ws.Signaled():
			c := t.exited(tid, ws)
			if tid == t.main {
				code = c
				// The server is gone: whatever it left behind dies with
				// PID 1, and its exits are not waited for.
				return code
			}
		case ws.Stopped():
			t.stopped(tid, ws)
		}
	}
	if code < 0 {
		code = 0
	}
	return code
}

// task returns a stopped task's entry. A task without one is new, and its
// creator's event is still to come: the kernel wakes a child before its
// creator stops to report it, and wait returns the newest tracee first, so
// the child's first stops, and even its end, can come before that event.
// Such a task is told thread or process now, while it is stopped and /proc
// has it, and a new process is reported now: before it can exec or exit,
// and before its creator returns from fork.
func (t *tracer) task(tid int) *task {
	tk, ok := t.tasks[tid]
	if ok {
		return tk
	}
	st := statusFields(tid, "Tgid:", "PPid:")
	tk = &task{tgid: st[0]}
	if tk.tgid == 0 {
		tk.tgid = tid // unreadable: taken as a process, not reported
	}
	t.tasks[tid] = tk
	t.early[tid] = true
	if st[0] == tid {
		t.forked(tid, st[1])
	}
	return tk
}

// forked reports a new process once, before anything it does: at its
// creator's event or at its own first stop, whichever the tracer sees
// first. A child that never execs can still outlive the call: the runner
// must know it exists, and when it exits.
func (t *tracer) forked(pid, ppid int) {
	np := newProcess(ppid)
	np.reported = true
	t.procs[pid] = np
	t.out.emit(&Event{Kind: KindFork, PID: pid, PPID: ppid})
	if pp := t.procs[ppid]; pp != nil {
		for fd, pr := range pp.socks { // a fork copies the fd table
			np.socks[fd] = pr
		}
	}
}

func (t *tracer) proc(tgid int) *process {
	p, ok := t.procs[tgid]
	if !ok {
		p = newProcess(ppidOf(tgid))
		t.procs[tgid] = p
	}
	return p
}

func (t *tracer) exited(tid int, ws unix.WaitStatus) int {
	tk := t.tasks[tid]
	delete(t.tasks, tid)
	code := ws.ExitStatus()
	sig := ""
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
		sig = unix.SignalName(ws.Signal())
	}
	if tk == nil {
		// Ended before its first stop and before its creator's event: it
		// never ran, and that event must not report it.
		t.early[tid] = true
		return code
	}
	if tk.tgid != tid {
		return code // a thread
	}
	if p := t.procs[tid]; p != nil {
		if p.reported && !p.exitSent {
			c := code
			t.out.emit(&Event{Kind: KindExit, PID: tid, PPID: p.ppid, ExitCode: &c, Signal: sig})
		}
		delete(t.procs, tid)
	}
	return code
}

func (t *tracer) stopped(tid int, ws unix.WaitStatus) {
	sig := ws.StopSignal()
	tk := t.task(tid)
	switch {
	case sig == unix.SIGTRAP|0x80:
		t.syscallExit(tid, tk)
		unix.PtraceCont(tid, 0)
		return
	case sig == unix.SIGTRAP && ws.TrapCause() != 0:
		t.event(tid, tk, ws.TrapCause())
		return
	case sig == unix.SIGSTOP && !tk.started:
		tk.started = true // a new task's first stop
		unix.PtraceCont(tid, 0)
		return
	}
	unix.PtraceCont(tid, int(sig)) // a real signal: deliver it
}

func (t *tracer) event(tid int, tk *task, cause int) {
	switch cause {
	case unix.PTRACE_EVENT_SECCOMP:
		if t.seccomp(tid, tk) {
			unix.PtraceSyscall(tid, 0)
			return
		}
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		if msg, err := unix.PtraceGetEventMsg(tid); err == nil {
			t.created(tid, tk, int(msg), cause)
		}
	case unix.PTRACE_EVENT_EXIT:
		if tid == tk.tgid && !leaderThreadExit(tid) {
			if p := t.procs[tid]; p != nil && p.reported && !p.exitSent {
				msg, err := unix.PtraceGetEventMsg(tid)
				if err == nil {
					ws := unix.WaitStatus(msg)
					code, sig := ws.ExitStatus(), ""
					if ws.Signaled() {
						code, sig = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
					}
					t.out.emit(&Event{Kind: KindExit, PID: tid, PPID: p.ppid, ExitCode: &code, Signal: sig})
					p.exitSent = true
				}
			}
		}
	case unix.PTRACE_EVENT_EXEC:
		// A non-leader thread that execs takes over the leader's tid.
		former, _ := unix.PtraceGetEventMsg(tid)
		if ft, ok := t.tasks[int(former)]; ok && int(former) != tid {
			tk.exit = ft.exit
			delete(t.tasks, int(former))
		}
		tk.tgid = tid
		t.proc(tid).reported = true
		if tk.exit != nil && tk.exit.ev.Kind == KindExec {
			tk.exit = nil // it worked: reported at the seccomp stop
		}
		unix.PtraceCont(tid, 0)
		return
	}
	unix.PtraceCont(tid, 0)
}

// created handles a creator's fork, vfork or clone event for the new task
// ntid: a thread is told from a process by the clone's own flags, and a
// new process is reported, unless the task was seen first on its own.
func (t *tracer) created(tid int, tk *task, ntid, cause int) {
	if t.early[ntid] {
		delete(t.early, ntid)
		if _, ok := t.tasks[ntid]; ok || gone(ntid) {
			return // told and, if a process, reported at its first stop
		}
		// A mark left by an earlier task of the same tid whose creator never
		// reported it (killed mid-clone): this one is new.
	}
	flags, ok := cloneFlags(tid)
	if !ok {
		// The creator's registers are gone (it was killed meanwhile): the
		// new task's /proc entry says, as it is not reaped yet.
		st := statusFields(ntid, "Tgid:", "PPid:")
		if st[0] == tk.tgid {
			flags = unix.CLONE_THREAD
		} else if st[1] != tk.tgid {
			flags = unix.CLONE_PARENT
		}
	}
	if cause == unix.PTRACE_EVENT_CLONE && flags&unix.CLONE_THREAD != 0 {
		t.tasks[ntid] = &task{tgid: tk.tgid}
		return
	}
	t.tasks[ntid] = &task{tgid: ntid}
	// Its real parent, as its own first stop would read it: the creator's
	// process, or under CLONE_PARENT the creator's parent.
	ppid := tk.tgid
	if flags&unix.CLONE_PARENT != 0 {
		ppid = ppidOf(ntid)
	}
	t.forked(ntid, ppid)
}

// seccomp records a stopped syscall; it returns true when the syscall's
// exit must be seen too.
func (t *tracer) seccomp(tid int, tk *task) bool {
	r, err := getRegs(tid)
	if err != nil {
		return false
	}
	p := t.proc(tk.tgid)
	switch r.nr {
	case sysSocket:
		domain, typ := int(r.args[0]), int(r.args[1])&0xf
		if domain != unix.AF_INET && domain != unix.AF_INET6 {
			return false
		}
		proto := map[int]string{unix.SOCK_STREAM: "tcp", unix.SOCK_DGRAM: "udp", unix.SOCK_RAW: "raw"}[typ]
		tk.exit = &pending{ev: &Event{Kind: sysSocketKind, Protocol: proto}}
		return true
	case sysExecve, sysExecveat:
		pathArg, argvArg := r.args[0], r.args[1]
		if r.nr == sysExecveat {
			pathArg, argvArg = r.args[1], r.args[2]
		}
		argv := readStrings(tid, argvArg, 256)
		if len(argv) == 0 {
			argv = []string{readString(tid, pathArg, 4096)}
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", tid))
		// Sent now, before the exec: the parent of a fork-exec learns of its
		// success (its close-on-exec pipe) before PTRACE_EVENT_EXEC, and may
		// answer its caller at once. A failure is sent at the syscall's exit.
		ev := &Event{Kind: KindExec, PID: tk.tgid, PPID: p.ppid, Argv: argv, Cwd: cwd, Result: "ok"}
		t.out.emit(ev)
		p.reported = true
		tk.exit = &pending{ev: &Event{Kind: KindExec, PID: tk.tgid, PPID: p.ppid, Argv: argv, Cwd: cwd}}
		return true
	case sysConnect:
		fd := int(r.args[0])
		ev := readSockaddr(tid, r.args[1], int(r.args[2]))
		if ev == nil {
			return false // AF_UNIX and the like: local IPC
		}
		ev.Kind, ev.PID = KindConnect, tk.tgid
		ev.Protocol = p.socks[fd]
		pd := &pending{ev: ev, fd: fd}
		if t.mode == ModeSinkhole && !isLoopback(ev.Address) && ev.Protocol != "udp" {
			pd.restore, pd.addrPtr = redirect(tid, r.args[1], int(r.args[2]))
		}
		p.dests[fd] = ev
		tk.exit = pd
		return true
	case sysSendto:
		fd, buf, n, addr, alen := int(r.args[0]), r.args[1], int(r.args[2]), r.args[4], int(r.args[5])
		t.sent(tid, tk.tgid, p, fd, addr, alen, readBytes(tid, buf, min(n, 512)))
	case sysSendmsg:
		t.sendmsg(tid, tk.tgid, p, int(r.args[0]), r.args[1])
	case sysSendmmsg:
		for i := 0; i < int(min(r.args[2], 16)); i++ {
			t.sendmsg(tid, tk.tgid, p, int(r.args[0]), r.args[1]+uint64(i)*64)
		}
	case sysBind:
		fd := int(r.args[0])
		ev := readSockaddr(tid, r.args[1], int(r.args[2]))
		if ev == nil {
			return false
		}
		ev.Kind, ev.PID = KindListen, tk.tgid
		ev.Protocol = p.socks[fd]
		p.binds[fd] = ev
		if ev.Protocol == "udp" && ev.Port != 0 {
			tk.exit = &pending{ev: ev}
			return true
		}
	case sysListen:
		fd := int(r.args[0])
		ev := p.binds[fd]
		if ev == nil {
			ev = &Event{Kind: KindListen, PID: tk.tgid, Protocol: p.socks[fd]}
		}
		cp := *ev
		tk.exit = &pending{ev: &cp}
		return true
	}
	return false
}

// sendmsg reads a struct msghdr: name, namelen, iov, iovlen.
func (t *tracer) sendmsg(tid, tgid int, p *process, fd int, msg uint64) {
	hdr := readBytes(tid, msg, 32)
	if len(hdr) < 32 {
		return
	}
	name, namelen := binary.LittleEndian.Uint64(hdr[0:]), int(binary.LittleEndian.Uint32(hdr[8:]))
	iov, iovlen := binary.LittleEndian.Uint64(hdr[16:]), binary.LittleEndian.Uint64(hdr[24:])
	var payload []byte
	if iovlen > 0 {
		if v := readBytes(tid, iov, 16); len(v) == 16 {
			base, n := binary.LittleEndian.Uint64(v[0:]), binary.LittleEndian.Uint64(v[8:])
			payload = readBytes(tid, base, int(min(n, 512)))
		}
	}
	t.sent(tid, tgid, p, fd, name, namelen, payload)
}

// sent records a datagram: its destination (given, or the socket's
// connected one) and, for DNS, the query name.
func (t *tracer) sent(tid, tgid int, p *process, fd int, addr uint64, alen int, payload []byte) {
	var dst *Event
	if addr != 0 {
		dst = readSockaddr(tid, addr, alen)
	} else if d := p.dests[fd]; d != nil {
		c := *d
		dst = &c
	}
	if dst == nil {
		return
	}
	if dst.Port == 53 && !(t.mode != ModeOpen && isLoopback(dst.Address)) {
		// The agent's own DNS sink reports queries to the loopback resolver.
		if name, ok := dnsQuestion(payload); ok {
			t.out.emit(&Event{Kind: KindDNS, PID: tgid, Host: name, Address: dst.Address, Port: 53, Protocol: "udp"})
		}
	}
	if addr == 0 {
		return // a connected socket: its connect was recorded
	}
	dst.Kind, dst.PID, dst.Protocol, dst.Result = KindConnect, tgid, "udp", "sent"
	key := fmt.Sprintf("%d %s %d", tgid, dst.Address, dst.Port)
	if t.seen[key] {
		return
	}
	t.seen[key] = true
	dst.Payload = payload
	t.out.emit(dst)
}

func (t *tracer) syscallExit(tid int, tk *task) {
	pd := tk.exit
	tk.exit = nil
	if pd == nil {
		return
	}
	r, err := getRegs(tid)
	if err != nil {
		return
	}
	if pd.restore != nil {
		writeBytes(tid, pd.addrPtr, pd.restore)
	}
	res := "ok"
	if r.ret < 0 && r.ret > -4096 {
		res = unix.ErrnoName(syscall.Errno(-r.ret))
		if res == "" {
			res = "errno " + strconv.FormatInt(-r.ret, 10)
		}
	}
	if pd.ev.Kind == KindExec && res == "ok" {
		return // reported at PTRACE_EVENT_EXEC
	}
	if pd.ev.Kind == sysSocketKind {
		if r.ret >= 0 {
			t.proc(tk.tgid).socks[int(r.ret)] = pd.ev.Protocol
		}
		return
	}
	if pd.restore != nil {
		res = "sinkholed:" + res
	}
	if pd.ev.Kind == KindConnect && pd.ev.Protocol == "" {
		// An unconnected TCP socket is in no /proc table; a connected one is.
		if pd.ev.Protocol = protoOf(tk.tgid, pd.fd); pd.ev.Protocol == "" {
			pd.ev.Protocol = "tcp"
		}
	}
	pd.ev.Result = res
	t.out.emit(pd.ev)
}

// readBytes reads n bytes of a task's memory (fewer at an unmapped page)
// with process_vm_readv: one syscall, no file to open.
func readBytes(tid int, addr uint64, n int) []byte {
	if addr == 0 || n <= 0 {
		return nil
	}
	b := make([]byte, n)
	local := []unix.Iovec{{Base: &b[0], Len: uint64(n)}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}
	m, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err != nil || m <= 0 {
		return readMem(tid, addr, b)
	}
	return b[:m]
}

// readMem is the fallback through /proc/pid/mem.
func readMem(tid int, addr uint64, b []byte) []byte {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", tid))
	if err != nil {
		return nil
	}
	defer f.Close()
	m, _ := f.ReadAt(b, int64(addr))
	return b[:m]
}

func writeBytes(tid int, addr uint64, b []byte) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tid), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteAt(b, int64(addr))
}

func readString(tid int, addr uint64, max int) string {
	var out []byte
	for len(out) < max {
		chunk := readBytes(tid, addr+uint64(len(out)), 256)
		if len(chunk) == 0 {
			break
		}
		if i := indexByte(chunk, 0); i >= 0 {
			return string(append(out, chunk[:i]...))
		}
		out = append(out, chunk...)
	}
	return string(out)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// readStrings reads a NULL-terminated array of string pointers.
func readStrings(tid int, addr uint64, max int) []string {
	var out []string
	for i := 0; i < max && addr != 0; i++ {
		p := readBytes(tid, addr+uint64(i*8), 8)
		if len(p) < 8 {
			break
		}
		ptr := binary.LittleEndian.Uint64(p)
		if ptr == 0 {
			break
		}
		out = append(out, readString(tid, ptr, 4096))
	}
	return out
}

// readSockaddr decodes an AF_INET or AF_INET6 address; others give nil.
func readSockaddr(tid int, addr uint64, n int) *Event {
	b := readBytes(tid, addr, min(n, 128))
	if len(b) < 2 {
		return nil
	}
	switch binary.LittleEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < 8 {
			return nil
		}
		return &Event{Family: "inet", Port: int(binary.BigEndian.Uint16(b[2:])), Address: net.IP(b[4:8]).String()}
	case unix.AF_INET6:
		if len(b) < 24 {
			return nil
		}
		return &Event{Family: "inet6", Port: int(binary.BigEndian.Uint16(b[2:])), Address: net.IP(b[8:24]).String()}
	}
	return nil
}

// redirect rewrites a connect() destination to the loopback, same port,
// where the sinkhole listens; it returns the original bytes.
func redirect(tid int, addr uint64, n int) ([]byte, uint64) {
	orig := readBytes(tid, addr, min(n, 28))
	if len(orig) < 8 {
		return nil, 0
	}
	b := append([]byte(nil), orig...)
	switch binary.LittleEndian.Uint16(b) {
	case unix.AF_INET:
		copy(b[4:8], net.IPv4(127, 0, 0, 1).To4())
	case unix.AF_INET6:
		if len(b) < 24 {
			return nil, 0
		}
		copy(b[8:24], net.IPv4(127, 0, 0, 1).To16()) // ::ffff:127.0.0.1
	default:
		return nil, 0
	}
	writeBytes(tid, addr, b)
	return orig, addr
}

func isLoopback(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && ip.IsLoopback()
}

// protoOf names the protocol of a socket the process did not make itself
// (inherited, or passed over a unix socket): the fd's inode, looked up in
// the process's tcp and udp tables. It is slow (milliseconds in a
// container), so it runs only when socket() was not seen.
func protoOf(pid, fd int) string {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil || !strings.HasPrefix(link, "socket:[") {
		return ""
	}
	inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
	for _, proto := range []string{"tcp", "udp", "tcp6", "udp6"} {
		if procNetHas(fmt.Sprintf("/proc/%d/net/%s", pid, proto), inode) {
			return strings.TrimSuffix(proto, "6")
		}
	}
	return ""
}

func procNetHas(path, inode string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[9] == inode {
			return true
		}
	}
	return false
}

// cloneFlags returns the flags of the clone a task stopped at its fork,
// vfork or clone event made: clone's first argument, or the first field of
// clone3's struct (none for fork and vfork). A thread (CLONE_THREAD) is
// told from a process by them, not by /proc, which no longer has a thread
// that has ended.
func cloneFlags(tid int) (uint64, bool) {
	r, err := getRegs(tid)
	if err != nil {
		return 0, false
	}
	switch r.nr {
	case sysClone:
		return r.args[0], true
	case sysClone3:
		b := readBytes(tid, r.args[0], 8)
		if len(b) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b), true
	}
	return 0, true
}

// leaderThreadExit tells a group leader that ends only its own thread
// (SYS_exit while other threads run on) from the end of the process.
func leaderThreadExit(tid int) bool {
	r, err := getRegs(tid)
	if err != nil || r.nr != sysExit {
		return false
	}
	return statusFields(tid, "Threads:")[0] > 1
}

func ppidOf(pid int) int { return statusFields(pid, "PPid:")[0] }

// gone tells a task that has ended (a zombie, or reaped) from a live one.
func gone(tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	switch b[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}

// statusFields reads numeric fields of /proc/PID/status, 0 where missing
// or unreadable.
func statusFields(pid int, fields ...string) []int {
	out := make([]int, len(fields))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		for i, field := range fields {
			if strings.HasPrefix(l, field) {
				if v, err := strconv.Atoi(strings.TrimSpace(l[len(field):])); err == nil {
					out[i] = v
				}
			}
		}
	}
	return out
}
