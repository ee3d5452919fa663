package probes

import (
	"reflect"
	"testing"
)

func TestParseObjectKeepsFileOrder(t *testing.T) {
	steps, err := Parse([]byte(`{"zeta": {"a": 1}, "alpha": {}, "mid": null}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.Tool+" "+string(s.Arguments))
	}
	want := []string{`zeta {"a":1}`, `alpha {}`, `mid {}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseSteps(t *testing.T) {
	steps, err := Parse([]byte(`[{"tool":"a","arguments":{"x":"y"}},{"tool":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || string(steps[0].Arguments) != `{"x":"y"}` || string(steps[1].Arguments) != `{}` {
		t.Fatalf("got %+v", steps)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{``, `42`, `{"a": [1]}`, `{"a": {}, "a": {}}`, `[{"arguments":{}}]`, `{"a": {}} x`, `[{"tool":"a","bogus":1}]`,
		`[{"tool":"a","repeat":101}]`, `[{"tool":"a","repeat":-1}]`} { // a repeat past MaxRepeat is refused, never cut
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) = nil error, want one", in)
		}
	}
}

func TestParseRepeatBound(t *testing.T) {
	steps, err := Parse([]byte(`[{"tool":"a","repeat":100}]`))
	if err != nil || steps[0].Repeat != MaxRepeat {
		t.Fatalf("%v %+v", err, steps)
	}
	calls, _, _ := Plan([]Tool{{Name: "a"}}, steps, DefaultCanary())
	if len(calls) != 1+MaxRepeat {
		t.Errorf("%d calls, want %d", len(calls), 1+MaxRepeat)
	}
}
