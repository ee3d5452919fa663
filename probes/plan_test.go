package probes

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	tools := []Tool{
		{Name: "a", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "b", InputSchema: []byte(`{"type":"object","required":["path"]}`)},
		{Name: "c", InputSchema: []byte(`{"type":"object","required":["x"]}`)},
		{Name: "d"},
		{Name: "e", InputSchema: []byte(`{"type":"object","properties":{"x":{"type":"string","minLength":3,"maxLength":1}},"required":["x"]}`)},
	}
	calls, skips, unknown := Plan(tools, []Step{{Tool: "c", Arguments: []byte(`{"x":1}`)}, {Tool: "gone", Arguments: []byte(`{}`)}}, NewBait(7).Canary)
	var got []string
	for _, c := range calls {
		got = append(got, c.Tool+":"+c.Source+":"+string(c.Arguments))
	}
	want := []string{`c:probe:{"x":1}`, `a:empty:{}`, `b:synth:{"path":"` + NewBait(7).Canary.Text + `"}`, `d:empty:{}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if len(skips) != 1 || skips[0].Tool != "e" || !strings.Contains(skips[0].Reason, "no valid arguments") {
		t.Errorf("skips = %+v, want e with the reason", skips)
	}
	if !reflect.DeepEqual(unknown, []string{"gone"}) {
		t.Errorf("unknown = %q", unknown)
	}
}
