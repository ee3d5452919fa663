package sandbox

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// TestForkAndExecAcrossAMark: a child a call forked that execs only after
// the call's mark is reported on that call as what it ran, exactly as when
// its exec came before the mark.
func TestForkAndExecAcrossAMark(t *testing.T) {
	code := 0
	run := func(execBeforeMark bool) report.Report {
		s := newEventStore(100)
		pn := newProcNet(s, false)
		pn.sync = time.Millisecond
		now := agent.Now()
		add := func(dt int64, e agent.Event) { e.T = now + dt; s.add(e) }
		add(1, agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"/server"}, Result: "ok"})
		var rep report.Report
		eff := report.NewEffects()
		pn.collect(context.Background(), &eff, false)
		add(2, agent.Event{Kind: agent.KindFork, PID: 11, PPID: 10})
		if execBeforeMark {
			add(3, agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: []string{"/bin/sleep", "1"}, Result: "ok"})
		}
		time.Sleep(time.Millisecond)
		call := report.NewEffects()
		pn.collect(context.Background(), &call, true)
		rep.Calls = append(rep.Calls, report.Call{Seq: 1, Effects: call})
		if !execBeforeMark {
			add(int64(2*time.Millisecond), agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: []string{"/bin/sleep", "1"}, Result: "ok"})
		}
		add(int64(3*time.Millisecond), agent.Event{Kind: agent.KindExit, PID: 11, PPID: 10, ExitCode: &code})
		time.Sleep(5 * time.Millisecond)
		between := report.NewEffects()
		pn.collect(context.Background(), &between, false)
		if len(between.Processes) > 0 {
			rep.Phases = append(rep.Phases, report.Phase{Name: "between", After: 1, Effects: between})
		}
		pn.fill(&rep)
		return rep
	}
	for _, before := range []bool{true, false} {
		rep := run(before)
		ps := rep.Calls[0].Effects.Processes
		if len(ps) != 1 || ps[0].Argv[0] != "/bin/sleep" || !ps[0].Background || ps[0].ExitCode == nil || ps[0].PPID != 10 {
			t.Errorf("exec before the mark %v: call processes %+v", before, ps)
		}
		if len(rep.Phases) != 0 {
			t.Errorf("exec before the mark %v: phases %+v", before, rep.Phases)
		}
	}
}

// TestIdentityTruncationAndRefusals: a program's identity lands on its
// exec even when a mark falls between them; events cut at the agent's
// bounds are counted once each (an exec's failure repeats its mark) and
// reported as a problem; a refused socket and a refused unreadable
// connect are network entries.
func TestIdentityTruncationAndRefusals(t *testing.T) {
	s := newEventStore(100)
	pn := newProcNet(s, true)
	pn.sync = time.Millisecond
	now := agent.Now()
	add := func(dt int64, e agent.Event) { e.T = now + dt; s.add(e) }
	add(1, agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"/server"}, Result: "ok"})
	add(2, agent.Event{Kind: agent.KindExe, PID: 10, Exe: "/server", SHA256: "aa"})
	add(3, agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: []string{"ls"}, Result: "ok", Truncated: "argv"})
	add(4, agent.Event{Kind: agent.KindExec, PID: 12, PPID: 10, Argv: []string{"x"}, Result: "ok", Truncated: "argv"})
	add(5, agent.Event{Kind: agent.KindExec, PID: 12, PPID: 10, Argv: []string{"x"}, Result: "ENOEXEC", Truncated: "argv"})
	add(6, agent.Event{Kind: agent.KindSocket, PID: 10, Family: "vsock", Protocol: "stream", Result: "EAFNOSUPPORT"})
	add(7, agent.Event{Kind: agent.KindConnect, PID: 10, Result: "EACCES", Unreadable: true})
	add(8, agent.Event{Kind: agent.KindConnect, PID: 10, Address: "192.0.2.1", Port: 9, Protocol: "udp", Result: "sent", Truncated: "payload"})
	time.Sleep(time.Millisecond)
	var rep report.Report
	call := report.NewEffects()
	pn.collect(context.Background(), &call, true)
	rep.Calls = append(rep.Calls, report.Call{Seq: 1, Effects: call})
	add(int64(2*time.Millisecond), agent.Event{Kind: agent.KindExe, PID: 11, Exe: "/usr/bin/evil", SHA256: "bb", Anonymous: true})
	time.Sleep(3 * time.Millisecond)
	between := report.NewEffects()
	pn.collect(context.Background(), &between, false)
	pn.fill(&rep)

	ps := rep.Calls[0].Effects.Processes
	if len(ps) != 3 || ps[0].Exe != "/server" || ps[0].ExeSHA256 != "aa" || ps[0].Truncated {
		t.Fatalf("processes %+v", ps)
	}
	if ps[1].Exe != "/usr/bin/evil" || ps[1].ExeSHA256 != "bb" || !ps[1].Anonymous || !ps[1].Truncated {
		t.Errorf("the identity after the mark: %+v", ps[1])
	}
	if ps[2].ExecError != "ENOEXEC" || !ps[2].Truncated {
		t.Errorf("the failed exec: %+v", ps[2])
	}
	net := rep.Calls[0].Effects.Network
	if len(net) != 3 || net[0].Kind != "socket" || net[0].Family != "vsock" || net[0].Result != "EAFNOSUPPORT" ||
		!net[1].Unreadable || net[1].Result != "EACCES" || !net[2].Truncated {
		t.Errorf("network %+v", net)
	}
	if rep.Sandbox.EventsTruncated != 3 {
		t.Errorf("eventsTruncated %d, want 3 (two argv, one payload)", rep.Sandbox.EventsTruncated)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != "agent" || !strings.Contains(rep.Problems[0].Message, "argv 2, payload 1") {
		t.Errorf("problems %+v", rep.Problems)
	}
}

// TestProgramEventCarriesTheDirectory: a successful exec's directory comes
// on its program event (the agent reads /proc once, at the exec event), a
// failed one's on the exec; a program written before its hash ended has no
// sum, is named in a problem and counts as a cut event.
func TestProgramEventCarriesTheDirectory(t *testing.T) {
	s := newEventStore(100)
	pn := newProcNet(s, true)
	pn.sync = time.Millisecond
	now := agent.Now()
	add := func(dt int64, e agent.Event) { e.T = now + dt; s.add(e) }
	add(1, agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"sh"}, Result: "ENOENT", Cwd: "/workspace"})
	add(2, agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"sh"}, Result: "ok"})
	add(3, agent.Event{Kind: agent.KindExe, PID: 10, Exe: "/bin/sh", SHA256: "aa", Cwd: "/workspace/sub"})
	add(4, agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: []string{"/tmp/x"}, Result: "ok"})
	add(5, agent.Event{Kind: agent.KindExe, PID: 11, Exe: "/tmp/x", Cwd: "/tmp", Truncated: agent.ExeChanged})
	time.Sleep(time.Millisecond)
	var rep report.Report
	call := report.NewEffects()
	pn.collect(context.Background(), &call, true)
	rep.Calls = append(rep.Calls, report.Call{Seq: 1, Effects: call})
	pn.fill(&rep)
	ps := rep.Calls[0].Effects.Processes
	if len(ps) != 2 || ps[0].Cwd != "/workspace/sub" || ps[0].ExecError != "" || ps[1].Cwd != "/tmp" || ps[1].ExeSHA256 != "" || !ps[1].Truncated {
		t.Fatalf("processes %+v", ps)
	}
	// Counted as a cut event (the gate's capture-truncated), and named.
	if rep.Sandbox.EventsTruncated != 1 || len(rep.Problems) != 2 || !strings.Contains(rep.Problems[0].Message, "/tmp/x (process 11): written right after it ran") {
		t.Errorf("eventsTruncated %d, problems %+v", rep.Sandbox.EventsTruncated, rep.Problems)
	}
}

// TestTamperIsRecorded: a call the agent refused because it was aimed at
// it lands in the stretch's effects.tamper.
func TestTamperIsRecorded(t *testing.T) {
	s := newEventStore(100)
	pn := newProcNet(s, true)
	pn.sync = time.Millisecond
	now := agent.Now()
	s.add(agent.Event{T: now + 1, Kind: agent.KindTamper, PID: 10, Data: "prlimit64 RLIMIT_CPU of the agent", Result: "EPERM"})
	time.Sleep(time.Millisecond)
	call := report.NewEffects()
	pn.collect(context.Background(), &call, true)
	if len(call.Tamper) != 1 || call.Tamper[0] != (report.Tamper{PID: 10, Call: "prlimit64 RLIMIT_CPU of the agent", Result: "EPERM"}) {
		t.Errorf("tamper %+v", call.Tamper)
	}
}

// TestSyncEndsAtItsBound: a sync no tick answers ends when its bound
// elapses or its context ends, however late the waiter gets the lock.
// (A deadline read apart from the timer once left a waiter asleep after
// the timer's only wake-up: a CI run hung for 15 minutes.)
func TestSyncEndsAtItsBound(t *testing.T) {
	s := newEventStore(10)
	for range 200 {
		s.sync(context.Background(), agent.Now()+int64(time.Hour), time.Microsecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(time.Millisecond); cancel() }()
	s.sync(ctx, agent.Now()+int64(time.Hour), time.Hour)
}

// TestExecvpAttemptsAreOneSpawn: execvp tries each directory of PATH in
// one process, each failing with ENOENT but the last: the attempts are
// one entry with the final outcome, also when a mark falls between them.
func TestExecvpAttemptsAreOneSpawn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		found   bool
		markAt  int // after this many attempts
		wantErr string
	}{
		{"never found", false, 0, "ENOENT"},
		{"found last", true, 0, ""},
		{"never found, across a mark", false, 2, "ENOENT"},
		{"found last, across a mark", true, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEventStore(100)
			pn := newProcNet(s, false)
			pn.sync = time.Millisecond
			now := agent.Now()
			dt := int64(0)
			add := func(e agent.Event) { dt++; e.T = now + dt; s.add(e) }
			add(agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"/server"}, Result: "ok"})
			add(agent.Event{Kind: agent.KindFork, PID: 11, PPID: 10})
			argv := []string{"missing-prog", "--flag"}
			var rep report.Report
			call := report.NewEffects()
			between := report.NewEffects()
			const attempts = 5
			for i := 0; i < attempts; i++ {
				if tc.markAt > 0 && i == tc.markAt {
					time.Sleep(time.Millisecond)
					pn.collect(context.Background(), &call, true)
					now, dt = agent.Now(), 0
				}
				add(agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: argv, Result: "ok"})
				if i < attempts-1 || !tc.found {
					add(agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: argv, Result: "ENOENT"})
				}
			}
			if tc.found {
				add(agent.Event{Kind: agent.KindExe, PID: 11, Exe: "/usr/bin/missing-prog", SHA256: "cc"})
			}
			time.Sleep(time.Millisecond)
			if tc.markAt > 0 {
				pn.collect(context.Background(), &between, false)
			} else {
				pn.collect(context.Background(), &call, true)
			}
			rep.Calls = append(rep.Calls, report.Call{Seq: 1, Effects: call})
			pn.fill(&rep)
			var got []report.Process
			for _, p := range append(append([]report.Process{}, rep.Calls[0].Effects.Processes...), between.Processes...) {
				if p.PID == 11 {
					got = append(got, p)
				}
			}
			if len(got) != 1 || got[0].ExecError != tc.wantErr || strings.Join(got[0].Argv, " ") != "missing-prog --flag" {
				t.Fatalf("the spawn's entries: %+v", got)
			}
			if tc.found && got[0].Exe != "/usr/bin/missing-prog" {
				t.Errorf("the program found: %+v", got[0])
			}
		})
	}
}

// TestSettleClearsWhatEndedInIt: a process alive when its call returned
// and ended within the settle is not background; one still alive at the
// settle's end is.
func TestSettleClearsWhatEndedInIt(t *testing.T) {
	s := newEventStore(100)
	pn := newProcNet(s, false)
	pn.sync = time.Millisecond
	now := agent.Now()
	add := func(dt int64, e agent.Event) { e.T = now + dt; s.add(e) }
	add(1, agent.Event{Kind: agent.KindExec, PID: 10, PPID: 1, Argv: []string{"/server"}, Result: "ok"})
	add(2, agent.Event{Kind: agent.KindFork, PID: 11, PPID: 10})
	add(3, agent.Event{Kind: agent.KindExec, PID: 11, PPID: 10, Argv: []string{"quick"}, Result: "ok"})
	add(4, agent.Event{Kind: agent.KindFork, PID: 12, PPID: 10})
	add(5, agent.Event{Kind: agent.KindExec, PID: 12, PPID: 10, Argv: []string{"daemon"}, Result: "ok"})
	time.Sleep(time.Millisecond)
	call := report.NewEffects()
	pn.collect(context.Background(), &call, true)
	if len(call.Processes) != 3 || !call.Processes[1].Background || !call.Processes[2].Background {
		t.Fatalf("at the call's end: %+v", call.Processes)
	}
	code := 127
	s.add(agent.Event{Kind: agent.KindExit, PID: 11, PPID: 10, ExitCode: &code, T: agent.Now()})
	left := pn.settle(context.Background(), 100*time.Millisecond)
	if len(left) != 1 || left[0] != 12 {
		t.Errorf("left after the settle: %v", left)
	}
	if call.Processes[1].Background || !call.Processes[2].Background {
		t.Errorf("after the settle: %+v", call.Processes)
	}
}

// TestSinkAnswersAreLocal: in sinkhole mode a TCP connect to the
// sinkhole's DNS answer is a loopback entry (it reached the agent; the
// dns entry names the host), a datagram there and any other address are
// not; outside sinkhole mode the answers are ordinary addresses.
func TestSinkAnswersAreLocal(t *testing.T) {
	for _, answers := range []bool{true, false} {
		s := newEventStore(100)
		pn := newProcNet(s, true)
		pn.answers = answers
		pn.sync = time.Millisecond
		now := agent.Now()
		for i, e := range []agent.Event{
			{Kind: agent.KindConnect, PID: 10, Address: agent.SinkIP, Port: 80, Protocol: "tcp", Result: "sinkholed:EINPROGRESS"},
			{Kind: agent.KindConnect, PID: 10, Address: "192.0.2.1", Port: 443, Protocol: "tcp", Result: "sinkholed:EINPROGRESS"},
			{Kind: agent.KindConnect, PID: 10, Address: agent.SinkIP, Port: 9, Protocol: "udp", Result: "sent"},
			{Kind: agent.KindConnect, PID: 10, Address: "203.0.113.7", Port: 80, Protocol: "tcp", Result: "sinkholed:EINPROGRESS"},
		} {
			e.T = now + int64(i)
			s.add(e)
		}
		time.Sleep(time.Millisecond)
		call := report.NewEffects()
		pn.collect(context.Background(), &call, true)
		got := map[string]bool{}
		for _, n := range call.Network {
			got[fmt.Sprintf("%s:%d/%s", n.Address, n.Port, n.Protocol)] = n.Loopback
		}
		want := map[string]bool{"3fff::1:80/tcp": answers, "192.0.2.1:443/tcp": false, "3fff::1:9/udp": false, "203.0.113.7:80/tcp": false}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("answers %v: loopback by entry %v, want %v", answers, got, want)
		}
	}
}
