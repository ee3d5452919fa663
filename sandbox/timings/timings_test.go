package timings

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// at records a span of ms milliseconds from from ms, as Begin would.
func at(t *Track, step Step, call int, from, ms float64) {
	t.r.list = append(t.r.list, Span{Round: t.round, Session: t.session, Step: step, Call: call, StartMs: from, Ms: ms})
}

func TestFile(t *testing.T) {
	r := New(time.Unix(0, 0))
	scan, main := r.Track(SessionScan), r.Track(SessionMain)
	at(scan, StepReap, 0, 0, 5)
	at(main, StepStart, 0, 5, 500)
	at(main, StepCall, 1, 505, 20)
	at(main, StepSnapshot, 1, 525, 10)
	at(main, StepLinger, 1, 535, 3000)
	at(main, StepTeardown, 0, 3535, 200)
	at(main, StepSnapshot, 0, 3600, 50) // within the teardown: its own
	at(scan, StepReplays, 0, 3735, 6000)
	with, control := r.Track("replay 1 with"), r.Track("replay 1 control")
	at(r.Track("replay 1"), StepReplay, 1, 3735, 6000)
	at(with, StepLinger, 2, 4000, 3000)
	at(control, StepLinger, 2, 4000, 3000)
	f := r.File(10 * time.Second)

	want := map[Step]Total{
		StepReplays:  {StepReplays, 1, 6000, 0.6},
		StepLinger:   {StepLinger, 1, 3000, 0.3},
		StepStart:    {StepStart, 1, 500, 0.05},
		StepTeardown: {StepTeardown, 1, 150, 0.015},
		StepSnapshot: {StepSnapshot, 2, 60, 0.006},
		StepCall:     {StepCall, 1, 20, 0.002},
		StepReap:     {StepReap, 1, 5, 0.001},
	}
	if len(f.Path) != len(want) {
		t.Fatalf("path: %+v", f.Path)
	}
	for i, got := range f.Path {
		if got != want[got.Step] {
			t.Errorf("path %s: %+v, want %+v", got.Step, got, want[got.Step])
		}
		if i > 0 && got.Ms > f.Path[i-1].Ms {
			t.Errorf("path not sorted, largest first: %+v", f.Path)
		}
	}
	if f.Other != 10000-9735 {
		t.Errorf("other: %v", f.Other)
	}
	var names []string
	for _, s := range f.Sessions {
		names = append(names, s.Session)
	}
	if len(names) != 5 || names[0] != SessionScan || names[1] != SessionMain {
		t.Errorf("sessions: %q", names)
	}
}

// TestRounds: with --rounds each round's sessions are apart.
func TestRounds(t *testing.T) {
	r := New(time.Unix(0, 0))
	at(r.Round(1).Track(SessionMain), StepCall, 1, 0, 10)
	at(r.Round(2).Track(SessionMain), StepCall, 1, 20, 30)
	f := r.File(time.Second)
	if len(f.Sessions) != 2 || f.Sessions[0].Round != 1 || f.Sessions[1].Round != 2 {
		t.Fatalf("sessions: %+v", f.Sessions)
	}
	if len(f.Path) != 1 || f.Path[0].Count != 2 || f.Path[0].Ms != 40 {
		t.Errorf("path: %+v", f.Path)
	}
}

// TestNil: a run without --timings records nothing, and nothing fails.
func TestNil(t *testing.T) {
	var r *Recorder
	r.Round(2).Track(SessionMain).Begin(StepCall, 1)()
	if err := r.Write(nil, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestWrite(t *testing.T) {
	r := New(time.Now())
	r.Track(SessionMain).Begin(StepCall, 1)()
	var b bytes.Buffer
	if err := r.Write(&b, time.Second); err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(b.Bytes(), &f); err != nil || f.Version != Version || len(f.Spans) != 1 || f.Spans[0].Step != StepCall {
		t.Fatalf("%v: %s", err, b.Bytes())
	}
}
