//go:build linux && amd64

package agent

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// task is one traced thread.
type task struct {
	tgid int
	// exit is the syscall whose exit stop was asked for, with what to do
	// there.
	exit    *pending
	started bool // its initial SIGSTOP was consumed
	// exitStop is set while the task has PTRACE_O_TRACEEXIT, asked for
	// while its process's program is hashed (see identify) and taken over
	// by the tasks it makes meanwhile (the kernel copies the options): it
	// is taken off at the task's first stop once no hash waits, or every
	// exec of a server whose own program was new would stop once more.
	exitStop bool
}

// pending is an event finished at the syscall's exit.
type pending struct {
	ev      *Event
	restore []byte // original sockaddr, after a sinkhole rewrite
	addrPtr uint64
	fd      int
	// socket is set for socket(): the new fd's protocol is remembered,
	// nothing is emitted.
	socket bool
	// unread is set for an exec whose argv the agent could not read: it
	// is reported at the exec event (argv from /proc) or at its failure.
	unread bool
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
	// held holds new tasks stopped before their creator's event, with
	// their stop: that event says what they are (thread or process, and
	// whose child) without reading /proc, and resumes them. When the
	// tracer would otherwise wait with tasks held, /proc says instead.
	held map[int]unix.WaitStatus
	// seen dedups datagram events per process, destination and payload.
	seen map[string]bool
	// hashing holds the processes whose program is being hashed (see
	// identify), with a channel closed once its event is sent.
	hashing map[int]chan struct{}
	exes    *exeCache
	// pin keeps the tasks on the tracer's CPU while they stop often (nil:
	// never).
	pin *pinner
	// loopQueries tells the loopback DNS sink which queries were reported
	// here (nil in open mode: no sink).
	loopQueries *loopQueries
	// itimers records the ITIMER_REAL timers armed, for the quiet
	// readings (nil: not recorded).
	itimers *itimers
}

// maxSeen bounds the datagram dedup set; past it, it starts afresh (a
// datagram may then be reported twice, never lost).
const maxSeen = 1 << 16

func newTracer(main int, mode string, out *writer) *tracer {
	return &tracer{main: main, mode: mode, out: out, tasks: map[int]*task{main: {tgid: main, started: true}},
		procs: map[int]*process{main: newProcess(1)}, early: map[int]bool{}, held: map[int]unix.WaitStatus{}, seen: map[string]bool{}, exes: newExeCache(), hashing: map[int]chan struct{}{}}
}

// No PTRACE_O_TRACEEXIT: a process's exit is sent when wait shows its
// zombie, which its parent cannot see until the agent reaps it (see
// next), so the exit still lands before a tool that waited for it can
// answer, without a stop on the way out.
const ptraceOptions = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACESYSGOOD

// yieldEvery is how often the tracing goroutine passes through the
// scheduler. It never blocks but in waitid, so the runtime's monitor sees
// it on the same scheduling tick for ever: after 10 ms it takes it for a
// goroutine that will not yield, signals its thread, takes its P at the
// next syscall, and then polls every 20 µs for a while, waking on the
// same two CPUs as the traced server. Yielding first costs a hand-off to
// another thread and back (two wake-ups across CPUs, tens of µs on a
// VM): 9 ms, under the monitor's 10, halves what 5 ms cost (-1% on 1,000
// execs).
const yieldEvery = 9 * time.Millisecond

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
	last := Now()
	for {
		if Now()-last > int64(yieldEvery) {
			t.pin.look(t.tids)
			runtime.Gosched()
			last = Now()
		}
		tid, ws, err := next(len(t.held) > 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break // ECHILD: nothing left
		}
		if tid == 0 {
			// Nothing else to do: the held tasks' creators have not
			// stopped (or never will, killed in clone).
			t.release()
			continue
		}
		t.pin.stopped()
		switch {
		case ws.Exited() || ws.Signaled():
			delete(t.held, tid)
			c := t.exited(tid, ws)
			reap(tid)
			if tid == t.main {
				code = c
				// The server is gone: whatever it left behind dies with
				// PID 1, and its exits are not waited for.
				t.settleAll()
				return code
			}
		case ws.Stopped():
			t.stopped(tid, ws)
		}
	}
	t.settleAll()
	if code < 0 {
		code = 0
	}
	return code
}

// task returns the entry of a held task (see tracer.held) whose
// creator's event has not come: the kernel wakes a child before its
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
	t.pin.born(tid)
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

// tids lists the tasks the tracer knows.
func (t *tracer) tids() []int {
	out := make([]int, 0, len(t.tasks))
	for tid := range t.tasks {
		out = append(out, tid)
	}
	return out
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
	t.pin.gone(tid)
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
		t.settle(tid) // its program's event comes before its end
		if p.reported {
			c := code
			t.out.emit(&Event{Kind: KindExit, PID: tid, PPID: p.ppid, ExitCode: &c, Signal: sig})
		}
		delete(t.procs, tid)
		if t.itimers != nil {
			t.itimers.clear(tid)
		}
	}
	return code
}

// itimer records an ITIMER_REAL armed or disarmed (alarm, setitimer), at
// the syscall's entry: alarm's seconds are a register, so its time is
// known; setitimer's value is in memory another thread can rewrite after
// the read, so a process that called it keeps an armed timer of unknown
// time until an alarm(0) or its end (a scan waits longer, never less).
// ITIMER_VIRTUAL and ITIMER_PROF count only the process's own running
// time: they cannot wake a process that does not run.
func (t *tracer) itimer(tgid int, r regs) {
	if t.itimers == nil {
		return
	}
	switch {
	case r.nr == sysAlarm && uint32(r.args[0]) == 0:
		t.itimers.clear(tgid)
	case r.nr == sysAlarm:
		t.itimers.set(tgid, itimer{syscall: "alarm", bounded: true, due: time.Now().Add(time.Duration(uint32(r.args[0])) * time.Second)})
	case int32(r.args[0]) == unix.ITIMER_REAL && r.args[1] != 0:
		t.itimers.set(tgid, itimer{syscall: "setitimer"})
	}
}

// release resumes every held task, told from /proc.
func (t *tracer) release() {
	tids := make([]int, 0, len(t.held))
	for tid := range t.held {
		tids = append(tids, tid)
	}
	sort.Ints(tids)
	for _, tid := range tids {
		ws := t.held[tid]
		delete(t.held, tid)
		t.task(tid)
		t.stopped(tid, ws)
	}
}

func (t *tracer) stopped(tid int, ws unix.WaitStatus) {
	sig := ws.StopSignal()
	tk, ok := t.tasks[tid]
	if !ok {
		// New: its creator's event is still to come. Its stop is consumed,
		// or wait would show it again and again.
		reap(tid)
		t.held[tid] = ws
		return
	}
	if tk.exitStop {
		if _, hashing := t.hashing[tk.tgid]; !hashing {
			// Off while stopped; the mark stays for this stop, whose
			// fork event (if it is one) made a child with the option.
			unix.PtraceSetOptions(tid, ptraceOptions)
			defer func() { tk.exitStop = false }()
		}
	}
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
	case unix.PTRACE_EVENT_EXIT:
		// Asked for only while its program is hashed (see identify): the
		// task's memory, and with it the program's protection from
		// writes, lasts until the hash is done.
		t.settle(tk.tgid)
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		if msg, err := unix.PtraceGetEventMsg(tid); err == nil {
			t.created(tid, tk, int(msg), cause)
		}
	case unix.PTRACE_EVENT_EXEC:
		// A non-leader thread that execs takes over the leader's tid, and
		// ptrace refuses the task until its stop has been waited for:
		// consumed then (only then: it is one more system call per exec).
		former, err := unix.PtraceGetEventMsg(tid)
		if err != nil {
			reap(tid)
			former, _ = unix.PtraceGetEventMsg(tid)
		} else if int(former) != tid {
			reap(tid)
		}
		if ft, ok := t.tasks[int(former)]; ok && int(former) != tid {
			tk.exit = ft.exit
			delete(t.tasks, int(former))
			t.pin.gone(int(former))
		}
		tk.tgid = tid
		p := t.proc(tid)
		p.reported = true
		if pd := tk.exit; pd != nil && pd.ev != nil && pd.ev.Kind == KindExec {
			tk.exit = nil // it worked: reported at the seccomp stop
			if pd.unread {
				// Its new program is readable again, and its argv is in /proc.
				pd.ev.Argv, pd.ev.Truncated = cmdline(tid)
				pd.ev.Result = "ok"
				t.out.emit(pd.ev)
			}
		}
		t.identify(tid)
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
		if nt, ok := t.tasks[ntid]; ok || gone(ntid) {
			if ok && tk.exitStop {
				nt.exitStop = true
			}
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
	t.pin.born(ntid)
	if cause == unix.PTRACE_EVENT_CLONE && flags&unix.CLONE_THREAD != 0 {
		t.tasks[ntid] = &task{tgid: tk.tgid, exitStop: tk.exitStop}
		t.resumeHeld(ntid)
		return
	}
	t.tasks[ntid] = &task{tgid: ntid, exitStop: tk.exitStop}
	// Its real parent, as its own first stop would read it: the creator's
	// process, or under CLONE_PARENT the creator's parent.
	ppid := tk.tgid
	if flags&unix.CLONE_PARENT != 0 {
		ppid = ppidOf(ntid)
	}
	t.forked(ntid, ppid)
	t.resumeHeld(ntid)
}

// resumeHeld handles the stop a new task was held at, now that it is
// known.
func (t *tracer) resumeHeld(ntid int) {
	if ws, ok := t.held[ntid]; ok {
		delete(t.held, ntid)
		t.stopped(ntid, ws)
	}
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
	case sysAlarm, sysSetitimer:
		t.itimer(tk.tgid, r)
		return false
	case sysSocket:
		family, typ, proto := uint32(r.args[0]), uint32(r.args[1])&0xf, uint32(r.args[2])
		if !allowedFamily(family, proto) {
			res := "EAFNOSUPPORT"
			if err := refuse(tid, r, unix.EAFNOSUPPORT); err != nil {
				res = "refusal failed: " + err.Error()
			}
			t.out.emit(&Event{Kind: KindSocket, PID: tk.tgid, Family: familyName(family, proto), Protocol: typeName(typ), Result: res})
			return false
		}
		if family != unix.AF_INET && family != unix.AF_INET6 {
			return false
		}
		proto2 := map[uint32]string{unix.SOCK_STREAM: "tcp", unix.SOCK_DGRAM: "udp", unix.SOCK_RAW: "raw"}[typ]
		tk.exit = &pending{socket: true, ev: &Event{Protocol: proto2}}
		return true
	case sysExecve, sysExecveat:
		pathArg, argvArg := r.args[0], r.args[1]
		if r.nr == sysExecveat {
			pathArg, argvArg = r.args[1], r.args[2]
		}
		argv, trunc, err := readArgv(tid, argvArg)
		if err == nil && len(argv) == 0 {
			var path string
			path, _, err = readString(tid, pathArg, pageSize)
			argv = []string{path}
		}
		p.reported = true
		// The program this process ran before has its event out first.
		t.settle(tk.tgid)
		if err != nil {
			tk.exit = &pending{unread: true, ev: &Event{Kind: KindExec, PID: tk.tgid, PPID: p.ppid, Unreadable: true}}
			return true
		}
		// Sent now, before the exec: the parent of a fork-exec learns of its
		// success (its close-on-exec pipe) before PTRACE_EVENT_EXEC, and may
		// answer its caller at once. A failure is sent at the syscall's exit.
		// Its directory comes with its program, at the exec event (see
		// identify), or with the failure.
		t.out.emit(&Event{Kind: KindExec, PID: tk.tgid, PPID: p.ppid, Argv: argv, Result: "ok", Truncated: trunc})
		tk.exit = &pending{ev: &Event{Kind: KindExec, PID: tk.tgid, PPID: p.ppid, Argv: argv, Truncated: trunc}}
		return true
	case sysConnect:
		fd := int(r.args[0])
		ev, err := readSockaddr(tid, r.args[1], int(r.args[2]))
		if err != nil {
			t.refuseUnreadable(tid, r, tk.tgid)
			return false
		}
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
		if t.mode == ModeSinkhole && ev.Protocol == "udp" && isSinkAddress(ev.Address) {
			// A resolver sorting its answers (RFC 6724; glibc's
			// getaddrinfo does for a name that gives several, one per
			// socket type) connects a UDP socket to each to learn its
			// source address:
			// nothing is sent, and a datagram that follows is recorded by
			// its send. Reported, it would be the same entry on every
			// call that resolves a name.
			return false
		}
		tk.exit = pd
		return true
	case sysSendto:
		msg := message{name: r.args[4], namelen: int(uint32(r.args[5])), iov: []iovec{{r.args[1], r.args[2]}}}
		t.send(tid, r, tk.tgid, p, int(r.args[0]), []message{msg})
	case sysSendmsg:
		msgs, err := readMsghdrs(tid, r.args[1], 1, 56)
		if err != nil {
			t.refuseUnreadable(tid, r, tk.tgid)
			return false
		}
		t.send(tid, r, tk.tgid, p, int(r.args[0]), msgs)
	case sysSendmmsg:
		// The kernel itself sends at most MaxMessages.
		msgs, err := readMsghdrs(tid, r.args[1], min(uint64(uint32(r.args[2])), MaxMessages), 64)
		if err != nil {
			t.refuseUnreadable(tid, r, tk.tgid)
			return false
		}
		t.send(tid, r, tk.tgid, p, int(r.args[0]), msgs)
	case sysBind:
		fd := int(r.args[0])
		ev, _ := readSockaddr(tid, r.args[1], int(r.args[2]))
		if ev == nil {
			return false // not inet, or unreadable: listen() is still recorded
		}
		ev.Kind, ev.PID = KindListen, tk.tgid
		ev.Protocol = p.socks[fd]
		p.binds[fd] = ev
		if ev.Protocol == "udp" && ev.Port != 0 {
			tk.exit = &pending{ev: ev}
			return true
		}
	case sysPrlimit64, sysSchedSetparam, sysSchedSetsched, sysSchedSetaffin, sysSchedSetattr, sysSetpriority, sysIoprioSet:
		t.guard(tid, tk, r)
		return false
	case sysClone: // stopped only with CLONE_UNTRACED (see filter)
		res := "EPERM"
		if err := refuse(tid, r, unix.EPERM); err != nil {
			res = "refusal failed: " + err.Error()
		}
		t.out.emit(&Event{Kind: KindTamper, PID: tk.tgid, Data: "clone with CLONE_UNTRACED (a child the agent could not follow)", Result: res})
		return false
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

// refuseUnreadable fails a network call whose destination or data the
// agent cannot read (EACCES), and records it: fail closed, never blind.
func (t *tracer) refuseUnreadable(tid int, r regs, tgid int) {
	res := "EACCES"
	if err := refuse(tid, r, unix.EACCES); err != nil {
		res = "refusal failed: " + err.Error()
	}
	t.out.emit(&Event{Kind: KindConnect, PID: tgid, Result: res, Unreadable: true})
}

// message is one datagram of a send call: its destination (none: the
// socket's connected one) and its buffers.
type message struct {
	name    uint64
	namelen int
	iov     []iovec
}

// readMsghdrs reads n struct msghdr (size apart: 56 for sendmsg, 64 for
// sendmmsg's struct mmsghdr) with their iovec arrays.
func readMsghdrs(tid int, addr, n uint64, size int) ([]message, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := readBytes(tid, addr, int(n)*size)
	if err != nil {
		return nil, err
	}
	var out []message
	for off := 0; off+56 <= len(b); off += size {
		h := b[off:]
		m := message{name: binary.LittleEndian.Uint64(h[0:]), namelen: int(binary.LittleEndian.Uint32(h[8:]))}
		if m.iov, err = readIovecs(tid, binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:])); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// send records what one send call sends: for each destination (given, or
// the socket's connected one) a connect event with the data, and for DNS
// every question, reading every message and buffer up to MaxPayload
// bytes for the whole call. A call whose destination or data cannot be
// read is refused.
func (t *tracer) send(tid int, r regs, tgid int, p *process, fd int, msgs []message) {
	type dest struct {
		ev   *Event
		data []byte
	}
	var dests []*dest
	byAddr := map[string]*dest{}
	left := MaxPayload
	cut := false
	for _, m := range msgs {
		var dst *Event
		if m.name != 0 {
			d, err := readSockaddr(tid, m.name, m.namelen)
			if err != nil {
				t.refuseUnreadable(tid, r, tgid)
				return
			}
			dst = d
		} else if d := p.dests[fd]; d != nil {
			c := *d
			dst = &c
		}
		if dst == nil {
			continue // not inet: local IPC
		}
		data, c, err := gather(tid, m.iov, &left)
		if err != nil {
			t.refuseUnreadable(tid, r, tgid)
			return
		}
		cut = cut || c
		if dst.Port == 53 {
			t.dnsQueries(tgid, dst, data, c)
		}
		if m.name == 0 && p.socks[fd] != "udp" {
			continue // a connected stream: its connect was recorded
		}
		key := dst.Address + " " + strconv.Itoa(dst.Port)
		d := byAddr[key]
		if d == nil {
			d = &dest{ev: dst}
			byAddr[key] = d
			dests = append(dests, d)
		}
		d.data = append(d.data, data...)
	}
	for _, d := range dests {
		dst := d.ev
		dst.Kind, dst.PID, dst.Protocol, dst.Result = KindConnect, tgid, "udp", "sent"
		// The loopback is deduplicated by address (nothing leaves there);
		// elsewhere each distinct payload is reported, whatever carries a
		// secret. A DNS query's id (its first two bytes) does not count.
		key := fmt.Sprintf("%d %s %d", tgid, dst.Address, dst.Port)
		if !isLoopback(dst.Address) {
			h := fnv.New64a()
			if dst.Port == 53 && len(d.data) > 2 {
				h.Write(d.data[2:])
			} else {
				h.Write(d.data)
			}
			key += fmt.Sprintf(" %x", h.Sum64())
		}
		if cut {
			dst.Truncated = "payload"
		} else if t.seen[key] {
			continue
		}
		if len(t.seen) >= maxSeen {
			clear(t.seen)
		}
		t.seen[key] = true
		dst.Payload = d.data
		t.out.emit(dst)
	}
}

// dnsQueries reports every question of a DNS query sent to dst.
func (t *tracer) dnsQueries(tgid int, dst *Event, payload []byte, cut bool) {
	names, more := dnsQuestions(payload, MaxQuestions)
	trunc := ""
	if cut {
		trunc = "payload"
	}
	if more {
		trunc = addTrunc(trunc, "questions")
	}
	// To the agent's own resolver: reported now, as the sink would (its
	// result, the query once), and the sink told so.
	sink := t.mode != ModeOpen && dst.Address == sinkDNSAddr && t.loopQueries != nil
	for i, name := range names {
		ev := &Event{Kind: KindDNS, PID: tgid, Host: name, Address: dst.Address, Port: 53, Protocol: "udp", Truncated: trunc}
		if sink {
			ev.Result = sinkResult(t.mode)
			if i == 0 {
				ev.Payload = append([]byte(nil), payload...)
			}
		}
		t.out.emit(ev)
	}
	if sink && len(names) > 0 && !cut {
		t.loopQueries.add(payload)
	}
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
	if pd.ev.Kind == KindExec {
		if res == "ok" {
			return // reported at PTRACE_EVENT_EXEC
		}
		pd.ev.Cwd, _ = os.Readlink("/proc/" + strconv.Itoa(tid) + "/cwd")
	}
	if pd.socket {
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

// redirect rewrites a connect() destination to the loopback, same port,
// where the sinkhole listens; it returns the original bytes.
func redirect(tid int, addr uint64, n int) ([]byte, uint64) {
	orig, _ := readBytes(tid, addr, min(n, 28))
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

// isSinkAddress tells whether a is the sinkhole's DNS answer.
func isSinkAddress(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && ip.Equal(net.ParseIP(SinkIP))
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
		b, _ := readBytes(tid, r.args[0], 8)
		if len(b) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b), true
	}
	return 0, true
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
// or unreadable. Raw syscalls: it runs at stops of new tasks, while they
// wait.
func statusFields(pid int, fields ...string) []int {
	out := make([]int, len(fields))
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return out
	}
	var buf [4096]byte
	n, _ := unix.Read(fd, buf[:])
	unix.Close(fd)
	if n <= 0 {
		return out
	}
	for _, l := range strings.Split(string(buf[:n]), "\n") {
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

// chldInfo is the kernel's siginfo_t for SIGCHLD, as waitid fills it.
type chldInfo struct {
	signo, errno, code, _ int32
	pid                   int32
	uid                   uint32
	status                int32
	_                     [100]byte
}

// siginfo si_code values for SIGCHLD.
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// next waits for the next stop or end of any traced task (with nohang,
// it returns tid 0 when there is none yet). An end is not consumed
// (WNOWAIT): the task stays a zombie that only the agent, its tracer, can
// see, and its parent learns of the end only once reap has run, after the
// exit event is sent. A stop needs no consuming: resuming the task clears
// it (but for an exec that changed the task's pid, see event). Every stop
// must be resumed, or wait shows it again.
func next(nohang bool) (int, unix.WaitStatus, error) {
	var si chldInfo
	opts := unix.WEXITED | unix.WSTOPPED | unix.WALL | unix.WNOWAIT
	if nohang {
		opts |= unix.WNOHANG
	}
	_, _, errno := unix.Syscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&si)), uintptr(opts), 0, 0)
	if errno != 0 {
		return 0, 0, errno
	}
	if si.pid == 0 {
		return 0, 0, nil // WNOHANG: nothing yet
	}
	// The same status wait4 would give.
	var ws unix.WaitStatus
	switch si.code {
	case cldExited:
		ws = unix.WaitStatus(si.status&0xff) << 8
	case cldKilled:
		ws = unix.WaitStatus(si.status & 0x7f)
	case cldDumped:
		ws = unix.WaitStatus(si.status&0x7f) | 0x80
	default: // CLD_TRAPPED, CLD_STOPPED: the stop's full code, events included
		ws = unix.WaitStatus(si.status)<<8 | 0x7f
	}
	return int(si.pid), ws, nil
}

// reap consumes a task's stop or an ended task's zombie, which lets its
// parent see it.
func reap(tid int) {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil); err != unix.EINTR {
			return
		}
	}
}

// guard refuses, with EPERM, a call that would change the agent's own
// limits, scheduling or CPUs (the filter stops them only when aimed at
// another process than the caller), and records it; one aimed at another
// of the server's processes runs. The agent is PID 1 in the sandbox, but
// its threads have ids of their own, and a process group or a user can
// take it in too. The record names the call and what it was aimed at,
// never a kernel id (the report is the same from run to run).
func (t *tracer) guard(tid int, tk *task, r regs) {
	which, who := int(int32(r.args[0])), int(int32(r.args[1]))
	name, target := "", ""
	aimedAt := func(id int) string {
		switch {
		case id <= 0:
			return ""
		case id == os.Getpid():
			return "the agent"
		case t.isAgent(id):
			return "a thread of the agent"
		}
		return ""
	}
	switch r.nr {
	case sysSetpriority, sysIoprioSet:
		name = map[int]string{sysSetpriority: "setpriority", sysIoprioSet: "ioprio_set"}[r.nr]
		// setpriority: PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2; ioprio_set:
		// IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3.
		scope := which
		if r.nr == sysIoprioSet {
			scope--
		}
		switch scope {
		case 0:
			target = aimedAt(who)
		case 1:
			pgrp := who
			if pgrp == 0 {
				pgrp, _ = unix.Getpgid(tid)
			}
			if pgrp == unix.Getpgrp() {
				target = "the agent's process group"
			}
		case 2:
			uid := who
			if uid == 0 {
				uid = statusFields(tid, "Uid:")[0] // the caller's real uid
			}
			if uid == os.Getuid() {
				target = "the agent's user"
			}
		}
	default:
		name = map[int]string{sysPrlimit64: "prlimit64", sysSchedSetparam: "sched_setparam", sysSchedSetsched: "sched_setscheduler",
			sysSchedSetaffin: "sched_setaffinity", sysSchedSetattr: "sched_setattr"}[r.nr]
		target = aimedAt(which)
		if r.nr == sysPrlimit64 {
			if r.args[2] == 0 {
				return // only reading another process's limits: harmless
			}
			name += " " + rlimitName(r.args[1])
		}
	}
	if target == "" {
		return
	}
	res := "EPERM"
	if err := refuse(tid, r, unix.EPERM); err != nil {
		res = "refusal failed: " + err.Error()
	}
	t.out.emit(&Event{Kind: KindTamper, PID: tk.tgid, Data: name + " of " + target, Result: res})
}

// rlimitName names a resource of prlimit64.
func rlimitName(res uint64) string {
	names := []string{"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_RSS", "RLIMIT_NPROC",
		"RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS", "RLIMIT_LOCKS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
		"RLIMIT_RTPRIO", "RLIMIT_RTTIME"}
	if res < uint64(len(names)) {
		return names[res]
	}
	return "resource " + strconv.FormatUint(res, 10)
}

// isAgent says whether a thread or process id is the agent's (any of its
// threads: the agent is one process).
func (t *tracer) isAgent(id int) bool {
	if id <= 0 {
		return false
	}
	if id == os.Getpid() {
		return true
	}
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(id))
	return err == nil
}
