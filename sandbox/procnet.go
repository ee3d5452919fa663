package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// procNet turns the agent's events into process and network effects, and
// remembers which processes still live.
type procNet struct {
	events *eventStore
	main   int          // the server's own process
	live   map[int]bool // ran a program and has not exited
	exits  map[int]int
	sync   time.Duration
	// started lists the processes the last call left running.
	started []int
	// secrets names the honeytokens found in data (nil: none planted).
	secrets func(data string) []string
	// sink is set when the agent answers DNS on 127.0.0.1:53: the
	// resolver's datagrams to it are reported as dns events, not connects.
	sink bool
	// answers is set in sinkhole mode, where the agent answers every name
	// with agent.SinkIP (set after newProcNet).
	answers bool
	// allowed finds the allowed host (--allow-host) whose listener a
	// container address and port is (nil: none).
	allowed func(addr string, port int) (AllowHost, bool)
	// forkOnly holds the children a call listed as "(forked, no exec)";
	// their execs after that call are the call's (fill puts them there),
	// not those of the stretch they fall in: whether a fork and its exec
	// straddle a mark is only a matter of timing.
	forkOnly map[int]bool
	lateExec map[int][]report.Process
	// lastExec is each process's latest exec entry, for the program
	// identity (agent.KindExe) that follows it, in this stretch or the next.
	lastExec map[int]execRef
	// truncated counts the events cut at one of the agent's bounds, by
	// what was cut.
	truncated map[string]int
	// changedExe names the programs whose sum could not be taken, and why
	// (they count as cut events too: the gate cannot pass them).
	changedExe []string
	// callProcs are the last call's processes (the slice its effects
	// hold), and settled the processes a call left running that ended
	// within --settle: neither is background.
	callProcs []report.Process
	settled   map[int]bool
}

// execRef points at an exec's entry: in the effects being collected
// (whose slice may still grow), in a forked child's late execs, or, once
// its stretch is collected, in that stretch's final slice, whose backing
// array the report holds: the entry is set in place.
type execRef struct {
	eff   *report.Effects
	late  bool
	procs []report.Process
	i     int
}

func (p *procNet) entry(pid int) *report.Process {
	ref, ok := p.lastExec[pid]
	if !ok {
		return nil
	}
	procs := ref.procs
	switch {
	case ref.eff != nil:
		procs = ref.eff.Processes
	case ref.late:
		procs = p.lateExec[pid]
	}
	if ref.i >= len(procs) || procs[ref.i].PID != pid {
		return nil
	}
	return &procs[ref.i]
}

func newProcNet(events *eventStore, sink bool) *procNet {
	return &procNet{events: events, live: map[int]bool{}, exits: map[int]int{}, sync: 2 * time.Second, sink: sink,
		forkOnly: map[int]bool{}, lateExec: map[int][]report.Process{}, lastExec: map[int]execRef{}, truncated: map[string]int{},
		settled: map[int]bool{}}
}

// cut counts an event the agent truncated.
func (p *procNet) cut(e agent.Event) bool {
	if e.Truncated == "" {
		return false
	}
	p.truncated[e.Truncated]++
	return true
}

// collect adds to eff the events up to now; for a call, processes it
// started that still live are marked background.
func (p *procNet) collect(ctx context.Context, eff *report.Effects, call bool) {
	if p == nil {
		return
	}
	m := agent.Now()
	p.events.sync(ctx, m, p.sync)
	forked := map[int]int{} // pid -> ppid, forked in this stretch and not exec'd yet
	for _, e := range p.events.take(m) {
		switch e.Kind {
		case agent.KindFork:
			p.live[e.PID] = true
			forked[e.PID] = e.PPID
		case agent.KindExec:
			if e.Result != "ok" && (p.failedLast(e) || p.failed(eff.Processes, e) || p.failed(p.lateExec[e.PID], e)) {
				continue // its truncation was counted with its first report
			}
			if e.Result == "ok" && p.retry(e) {
				continue // one more place of PATH tried: the same spawn
			}
			delete(forked, e.PID)
			pr := report.Process{PID: e.PID, PPID: e.PPID, Argv: e.Argv, Cwd: e.Cwd, Truncated: p.cut(e)}
			if pr.Argv == nil {
				pr.Argv = []string{}
			}
			if e.Result != "ok" {
				pr.ExecError = e.Result
			} else {
				if p.main == 0 && e.PPID == 1 {
					p.main = e.PID
				}
				p.live[e.PID] = true
			}
			if p.forkOnly[e.PID] {
				// It outlived the call that forked it, and, unless it ended
				// within --settle, the settle after it.
				pr.Background = !p.settled[e.PID]
				p.lateExec[e.PID] = append(p.lateExec[e.PID], pr)
				p.lastExec[e.PID] = execRef{late: true, i: len(p.lateExec[e.PID]) - 1}
				continue
			}
			eff.Processes = append(eff.Processes, pr)
			p.lastExec[e.PID] = execRef{eff: eff, i: len(eff.Processes) - 1}
		case agent.KindExe:
			cut := strings.Split(e.Truncated, ",")
			switch {
			case slices.Contains(cut, agent.ExeChanged):
				p.changedExe = append(p.changedExe, fmt.Sprintf("%s (process %d): written right after it ran", e.Exe, e.PID))
			case slices.Contains(cut, agent.ExeUnhashed):
				p.changedExe = append(p.changedExe, fmt.Sprintf("%s (process %d): its file could not be read", cmp.Or(e.Exe, "a program"), e.PID))
			case slices.Contains(cut, agent.ExeWritable):
				p.changedExe = append(p.changedExe, fmt.Sprintf("%s (process %d): a memfd open to writes, whose sum need not be what ran", e.Exe, e.PID))
			}
			trunc := p.cut(e)
			// It follows its exec at once: the entry is the process's latest.
			if pr := p.entry(e.PID); pr != nil {
				pr.Exe, pr.ExeSHA256, pr.Anonymous = e.Exe, e.SHA256, e.Anonymous
				if e.Cwd != "" {
					pr.Cwd = e.Cwd // a successful exec's directory comes with its program
				}
				pr.Truncated = pr.Truncated || trunc
			}
		case agent.KindTamper:
			eff.Tamper = append(eff.Tamper, report.Tamper{PID: e.PID, Call: e.Data, Result: e.Result})
		case agent.KindSocket:
			eff.Network = append(eff.Network, report.NetEvent{Kind: e.Kind, PID: e.PID, Family: e.Family, Protocol: e.Protocol, Result: e.Result})
		case agent.KindExit:
			delete(p.lastExec, e.PID)
			delete(p.live, e.PID)
			delete(forked, e.PID)
			delete(p.forkOnly, e.PID)
			delete(p.settled, e.PID)
			if e.ExitCode != nil {
				p.exits[e.PID] = *e.ExitCode
			}
			for i := range eff.Processes {
				if eff.Processes[i].PID == e.PID && eff.Processes[i].ExitCode == nil && eff.Processes[i].ExecError == "" {
					c := *e.ExitCode
					eff.Processes[i].ExitCode = &c
				}
			}
		case agent.KindConnect, agent.KindListen, agent.KindDNS, agent.KindHTTP, agent.KindTLS:
			if p.sink && e.Kind == agent.KindConnect && e.Address == "127.0.0.1" && e.Port == 53 {
				p.cut(e)
				continue
			}
			ip := net.ParseIP(e.Address)
			// A connection to the sinkhole's DNS answer reached the agent
			// on the loopback, as one to 127.0.0.1 does: the host it was
			// for is the dns entry's, and the address, the same for every
			// host, would make connections to different hosts look alike
			// across calls.
			// A datagram there stays an outside one: it reaches no one,
			// and its payload is searched for honeytokens.
			toSink := p.answers && e.Kind == agent.KindConnect && e.Protocol != "udp" &&
				ip.Equal(net.ParseIP(agent.SinkIP))
			local := ip != nil && (ip.IsLoopback() || toSink)
			ne := report.NetEvent{Kind: e.Kind, PID: e.PID, Host: e.Host, Address: e.Address,
				Port: e.Port, Protocol: e.Protocol, Result: e.Result, Method: e.Method, Path: e.Path,
				Loopback:   local && e.Kind != agent.KindHTTP && e.Kind != agent.KindTLS && e.Kind != agent.KindDNS,
				Unreadable: e.Unreadable, Truncated: p.cut(e)}
			if p.allowed != nil && e.Kind == agent.KindConnect && e.Protocol != "udp" {
				if h, ok := p.allowed(e.Address, e.Port); ok {
					allowedEvent(&ne, h)
				}
			}
			if p.secrets != nil && !ne.Loopback {
				// The tokens themselves stay out of the report: only their names.
				ne.Secrets = p.secrets(e.Host + "\n" + e.Path + "\n" + string(e.Payload))
			}
			eff.Network = append(eff.Network, ne)
		default:
			p.cut(e) // a frame cut before its kind could be read
		}
	}
	p.started = p.started[:0]
	if call {
		// A forked child that never ran a program and outlives the call is
		// listed too: it can act later like any other.
		pids := make([]int, 0, len(forked))
		for pid := range forked {
			pids = append(pids, pid)
		}
		sort.Ints(pids)
		for _, pid := range pids {
			if p.live[pid] {
				eff.Processes = append(eff.Processes, report.Process{PID: pid, PPID: forked[pid], Argv: []string{"(forked, no exec)"}})
				p.forkOnly[pid] = true
			}
		}
		for i := range eff.Processes {
			if pr := &eff.Processes[i]; p.live[pr.PID] && pr.PID != p.main {
				pr.Background = true
				if !slices.Contains(p.started, pr.PID) {
					p.started = append(p.started, pr.PID)
				}
			}
		}
		p.callProcs = eff.Processes
	}
	for pid, ref := range p.lastExec {
		if ref.eff == eff {
			p.lastExec[pid] = execRef{procs: eff.Processes, i: ref.i}
		}
	}
}

// retryable are the errors on which execvp (glibc, musl, libuv) goes on
// to the next directory of PATH.
var retryable = []string{"ENOENT", "ENOTDIR"}

// retry folds an exec into the process's latest entry when that is the
// same program (same argv) that failed with a retryable error: execvp
// trying the next directory of PATH. The entry takes the new attempt's
// outcome, so a spawn is recorded once, with its final outcome.
func (p *procNet) retry(e agent.Event) bool {
	pr := p.entry(e.PID)
	if pr == nil || !slices.Contains(retryable, pr.ExecError) || !slices.Equal(pr.Argv, e.Argv) {
		return false
	}
	pr.ExecError = ""
	if e.Cwd != "" {
		pr.Cwd = e.Cwd
	}
	pr.Truncated = p.cut(e) || pr.Truncated
	if p.main == 0 && e.PPID == 1 {
		p.main = e.PID
	}
	p.live[e.PID] = true
	return true
}

// failedLast marks the process's latest entry failed, when it is the
// exec e reports the failure of (in this stretch or an earlier one).
func (p *procNet) failedLast(e agent.Event) bool {
	pr := p.entry(e.PID)
	if pr == nil || pr.ExecError != "" || !slices.Equal(pr.Argv, e.Argv) {
		return false
	}
	pr.ExecError = e.Result
	if p.main == e.PID && e.PPID == 1 {
		p.main = 0
	}
	return true
}

// failed marks the exec the agent reported before it ran as failed, when
// it is in ps (this stretch's, or a forked child's late execs); it says
// whether it found it.
func (p *procNet) failed(ps []report.Process, e agent.Event) bool {
	for i := len(ps) - 1; i >= 0; i-- {
		pr := &ps[i]
		if pr.PID == e.PID && pr.ExecError == "" && strings.Join(pr.Argv, "\x00") == strings.Join(e.Argv, "\x00") {
			pr.ExecError = e.Result
			if p.main == e.PID && e.PPID == 1 {
				p.main = 0
			}
			return true
		}
	}
	return false
}

// background lists the processes the last call started that still live.
func (p *procNet) background() []int {
	if p == nil {
		return nil
	}
	out := append([]int(nil), p.started...)
	sort.Ints(out)
	return out
}

// settle waits, up to d, while the processes the last call left running
// live, so that what they do lands before the next phase begins. It
// returns those still alive at the end. Their exits are looked for at
// each tick, as the agent sends them, not on a clock of the runner's.
func (p *procNet) settle(ctx context.Context, d time.Duration) []int {
	if p == nil || len(p.background()) == 0 {
		return nil
	}
	p.events.waitFor(ctx, d, func() bool { return len(p.liveIn(p.events.exitsLocked())) == 0 })
	left := p.stillLive()
	p.endSettle(left)
	return left
}

// endSettle clears the background mark of the last call's processes
// that ended within the settle (those not left): a spawn that failed at
// once, or a child that finished its work in the window, did not run in
// the background. Their later execs are not background either.
func (p *procNet) endSettle(left []int) {
	for _, pid := range p.started {
		if !slices.Contains(left, pid) {
			p.settled[pid] = true
		}
	}
	for i := range p.callProcs {
		if pr := &p.callProcs[i]; pr.Background && p.settled[pr.PID] {
			pr.Background = false
		}
	}
}

// stillLive looks at the events not yet taken for exits of the background
// processes, without taking them.
func (p *procNet) stillLive() []int { return p.liveIn(p.events.peekExits()) }

// liveIn lists the background processes not among the exited.
func (p *procNet) liveIn(exited map[int]bool) []int {
	var out []int
	for _, pid := range p.background() {
		if !exited[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// fill puts the execs of a child a call forked, that came after the call,
// in place of its "(forked, no exec)" entry, and sets the exit codes that
// arrived after the phase that started a process was closed.
func (p *procNet) fill(rep *report.Report) {
	if p == nil {
		return
	}
	if len(p.changedExe) > 0 {
		rep.Problems = append(rep.Problems, report.Problem{Kind: "agent",
			Message: fmt.Sprintf("programs whose sha256 could not be taken: %s", strings.Join(p.changedExe, "; "))})
	}
	if n := p.truncatedTotal(); n > 0 {
		rep.Sandbox.EventsTruncated = n
		rep.Problems = append(rep.Problems, report.Problem{Kind: "agent",
			Message: fmt.Sprintf("%d agent events cut at a bound (%s): what went past it was not looked at", n, p.truncatedBy())})
	}
	for i := range rep.Calls {
		eff := &rep.Calls[i].Effects
		for j := 0; j < len(eff.Processes); j++ {
			pr := eff.Processes[j]
			late := p.lateExec[pr.PID]
			if len(late) == 0 || len(pr.Argv) != 1 || pr.Argv[0] != "(forked, no exec)" {
				continue
			}
			for k := range late {
				late[k].PPID = pr.PPID
			}
			eff.Processes = append(eff.Processes[:j], append(late, eff.Processes[j+1:]...)...)
			j += len(late) - 1
			delete(p.lateExec, pr.PID)
		}
	}
	set := func(ps []report.Process) {
		for i := range ps {
			if c, ok := p.exits[ps[i].PID]; ok && ps[i].ExitCode == nil && ps[i].ExecError == "" {
				v := c
				ps[i].ExitCode = &v
			}
		}
	}
	for i := range rep.Calls {
		set(rep.Calls[i].Effects.Processes)
	}
	for i := range rep.Phases {
		set(rep.Phases[i].Effects.Processes)
	}
}

func (p *procNet) truncatedTotal() int {
	n := 0
	for _, c := range p.truncated {
		n += c
	}
	return n
}

// truncatedBy says what was cut how often: "argv 1, payload 2".
func (p *procNet) truncatedBy() string {
	var out []string
	for what, n := range p.truncated {
		out = append(out, fmt.Sprintf("%s %d", what, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
