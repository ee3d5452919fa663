package sandbox

import (
	"context"
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
