package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
)

// TestProfile: the time from each -v line to the next goes to the step
// the line starts; lines that start none go on the step before; from a
// package's first replay to its end, every line is the replay's.
func TestProfile(t *testing.T) {
	at := func(ms int, text string) logLine {
		return logLine{At: time.Duration(ms) * time.Millisecond, Text: text}
	}
	log := []logLine{
		at(500, "starting node /package/x.js in sha256:1"),
		at(1500, "initialized {} (protocol 2025-06-18)"),
		at(1600, "listed 2 tool(s)"),
		at(1700, "call 1: a {}"),
		at(1900, "call 1 left 1 process(es) running; settling up to 2s"),
		at(2900, "call 2: b {}"),
		at(3000, "lingering 3s after call 2"),
		at(6000, "disk: 3 measurement(s)"),
		at(6100, "something unknown"),
		at(6500, "replaying call 2 (b) after 1 call(s) of its session"),
		at(6600, "starting node /package/x.js in sha256:1"),
		at(7000, "call 2's session: replaying setup call 1 (a)"),
		at(9000, "disk: 3 measurement(s)"),
		at(9500, "[1/2, 100/h, ETA 0s] npm:x: ok"),
		at(9600, "starting node /package/y.js in sha256:1"),
		at(9700, "initialized {} (protocol 2025-06-18)"),
	}
	total, order := Profile(log)
	want := map[string]time.Duration{
		"fetch (warm cache) and next container": 600 * time.Millisecond,
		"start: container, node, initialize":    1100 * time.Millisecond,
		"list tools":                            100 * time.Millisecond,
		"first call":                            100 * time.Millisecond,
		"calls (each call's own time)":          300 * time.Millisecond,
		"settle (background processes)":         time.Second,
		"linger":                                3 * time.Second,
		stepReplay:                              3 * time.Second,
		"teardown, verdict, report":             500 * time.Millisecond,
	}
	if !reflect.DeepEqual(total, want) {
		t.Errorf("Profile =\n%v\nwant\n%v", total, want)
	}
	if order[0] != stepNext || order[len(order)-1] != stepReplay {
		t.Errorf("order %v", order)
	}
}

// TestTables: the rate is packages over the run's wall time; each
// package's seconds at each -j are side by side.
func TestTables(t *testing.T) {
	sum := func(secs ...float64) bulk.Summary {
		var s bulk.Summary
		s.Totals.ByStatus = map[string]int{"ok": len(secs)}
		for i, x := range secs {
			s.Packages = append(s.Packages, bulk.Result{Key: string(rune('a' + i)), Name: string(rune('a' + i)), Status: bulk.StatusOK, Seconds: x})
		}
		return s
	}
	var b strings.Builder
	writeTables(&b, []measured{{Jobs: 1, Wall: 36 * time.Second, Sum: sum(10, 20, 6), Load: [2]string{"0.5", "1.5"}}, {Jobs: 2, Wall: 18 * time.Second, Sum: sum(11, 21, 7)}})
	for _, want := range []string{"| 1 | 3 | 36s | **300** | 10.0 s | 20.0 s | 36 s | ok 3 | 0.5 → 1.5 |", "| 2 | 3 | 18s | **600** |", "| b | 0 | 0 | 20.0 | 21.0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
}
