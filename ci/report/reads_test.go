package report

import (
	"testing"
)

// TestReadsShedAndNormalized: the reads' results are shed with the calls'
// (their size and hash kept), their effects shed last, and their processes
// numbered in order after the calls'; a report without reads has an
// empty, not null, list.
func TestReadsShedAndNormalized(t *testing.T) {
	r := New()
	r.Reads = nil
	eff := NewEffects()
	eff.Processes = []Process{{PID: 4242, Argv: []string{"cat"}}}
	eff.Files = []FileChange{{Path: "/workspace/x", Change: ChangeCreated}}
	callEff := NewEffects()
	callEff.Processes = []Process{{PID: 777, Argv: []string{"ls"}}}
	r.Calls = []Call{{Seq: 1, Tool: "t", Effects: callEff}}
	empty := New()
	empty.Reads = nil
	if empty.Normalize(); empty.Reads == nil {
		t.Fatal("reads is null after Normalize")
	}
	r.Reads = []Read{{Seq: 1, Method: "resources/read", Target: "a://b", Result: "text", WholeBytes: 40, WholeSha256: "abc", Effects: eff}}
	r.Timing = &Timing{}
	r.Normalize()
	if r.Calls[0].Effects.Processes[0].PID != 1 || r.Reads[0].Effects.Processes[0].PID != 2 {
		t.Errorf("pids: call %d, read %d; want 1, 2", r.Calls[0].Effects.Processes[0].PID, r.Reads[0].Effects.Processes[0].PID)
	}
	if n := r.Shed(ShedResults); n != 1 || r.Reads[0].Result != "" || r.Reads[0].ResultBytes != 40 || r.Reads[0].ResultSha256 != "abc" {
		t.Errorf("shed results: %d, %+v", n, r.Reads[0])
	}
	if n := r.Shed(ShedEffects); n == 0 || len(r.Reads[0].Effects.Files) != 0 {
		t.Errorf("shed effects: %d, %+v", n, r.Reads[0].Effects)
	}
}
