package sandbox

import (
	"context"
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
