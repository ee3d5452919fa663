package report

import (
	"sort"
	"strconv"
	"strings"
)

// Normalize makes the report deterministic: it sorts every array whose
// order is not meaningful, replaces kernel pids by ids in order of first
// appearance (kept in Timing.PIDs), and moves call durations to Timing.
// Timing must be set (it may be empty) for the pids and durations to be
// kept.
func (r *Report) Normalize() {
	if r.Timing == nil {
		r.Timing = &Timing{}
	}
	r.Timing.Calls = r.Timing.Calls[:0]
	for _, c := range r.Calls {
		r.Timing.Calls = append(r.Timing.Calls, CallTiming{Seq: c.Seq, DurationMs: c.DurationMs})
	}
	// Effects in the order they happened: phases before the first call,
	// then calls and the phases after each, then teardown.
	var all []*Effects
	var later []*Effects
	after := map[int][]*Effects{}
	for i := range r.Phases {
		p := &r.Phases[i]
		switch {
		case p.Name == "between":
			after[p.After] = append(after[p.After], &p.Effects)
		case p.Name == "teardown":
			later = append(later, &p.Effects)
		default:
			all = append(all, &p.Effects)
		}
	}
	all = append(all, after[0]...)
	for i := range r.Calls {
		all = append(all, &r.Calls[i].Effects)
		all = append(all, after[r.Calls[i].Seq]...)
	}
	if r.Reads == nil {
		r.Reads = []Read{} // present, never null
	}
	for i := range r.Reads {
		all = append(all, &r.Reads[i].Effects)
	}
	all = append(all, later...)

	ids := map[int]int{1: 0} // pid 1 is the agent: the sandbox's init
	id := func(pid int) int {
		if pid == 0 {
			return 0
		}
		if v, ok := ids[pid]; ok {
			return v
		}
		v := len(r.Timing.PIDs) + 1
		ids[pid] = v
		r.Timing.PIDs = append(r.Timing.PIDs, PIDMap{ID: v, PID: pid})
		return v
	}
	for _, e := range all {
		sort.SliceStable(e.Processes, func(i, j int) bool {
			a, b := e.Processes[i], e.Processes[j]
			if ka, kb := strings.Join(a.Argv, "\x00"), strings.Join(b.Argv, "\x00"); ka != kb {
				return ka < kb
			}
			if a.Cwd != b.Cwd {
				return a.Cwd < b.Cwd
			}
			// Equal programs: every field the JSON shows, so that the
			// order in which they happened to run does not matter.
			if a.ExecError != b.ExecError {
				return a.ExecError < b.ExecError
			}
			if ka, kb := a.Exe+"\x00"+a.ExeSHA256, b.Exe+"\x00"+b.ExeSHA256; ka != kb {
				return ka < kb
			}
			if a.Background != b.Background {
				return !a.Background
			}
			ea, eb := -1, -1
			if a.ExitCode != nil {
				ea = *a.ExitCode
			}
			if b.ExitCode != nil {
				eb = *b.ExitCode
			}
			return ea < eb
		})
		for i := range e.Processes {
			e.Processes[i].PID = id(e.Processes[i].PID)
		}
		for i := range e.Processes {
			e.Processes[i].PPID = id(e.Processes[i].PPID)
		}
		// Sorted before ids are given (ids follow first appearance), and
		// the pid left out of the key: its kernel value is arbitrary.
		sort.SliceStable(e.Network, func(i, j int) bool { return netKey(e.Network[i]) < netKey(e.Network[j]) })
		sort.SliceStable(e.Tamper, func(i, j int) bool { return e.Tamper[i].Call < e.Tamper[j].Call })
		for i := range e.Network {
			e.Network[i].PID = id(e.Network[i].PID)
		}
		for i := range e.Tamper {
			e.Tamper[i].PID = id(e.Tamper[i].PID)
		}
		sort.SliceStable(e.Files, func(i, j int) bool {
			if e.Files[i].Path != e.Files[j].Path {
				return e.Files[i].Path < e.Files[j].Path
			}
			return e.Files[i].Change == ChangeDeleted
		})
	}
	SortFindings(r.Findings)
	SortIgnored(r.Ignored)
}

// SortIgnored orders ignores by call, rule, tool and reason.
func SortIgnored(ig []Ignored) {
	sort.SliceStable(ig, func(i, j int) bool {
		return less(ig[i].Call, ig[j].Call, ig[i].Rule, ig[j].Rule, ig[i].Tool, ig[j].Tool, ig[i].Reason, ig[j].Reason)
	})
}

// SortFindings orders findings by call, rule, tool and evidence.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		return less(fs[i].Call, fs[j].Call, fs[i].Rule, fs[j].Rule, fs[i].Tool, fs[j].Tool,
			strings.Join(fs[i].Evidence, "\n"), strings.Join(fs[j].Evidence, "\n"))
	})
}

// less orders by call, then by each pair of strings in turn.
func less(callA, callB int, pairs ...string) bool {
	if callA != callB {
		return callA < callB
	}
	for k := 0; k+1 < len(pairs); k += 2 {
		if pairs[k] != pairs[k+1] {
			return pairs[k] < pairs[k+1]
		}
	}
	return false
}

func netKey(n NetEvent) string {
	return strings.Join([]string{n.Kind, n.Host, n.Address, itoa(n.Port), n.Protocol, n.Result, n.Method, n.Path, strings.Join(n.Secrets, ","),
		n.Family, strconv.FormatBool(n.Unreadable), strconv.FormatBool(n.Truncated)}, "\x00")
}

func itoa(i int) string { return strconv.Itoa(i) }
