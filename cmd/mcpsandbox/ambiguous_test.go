package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestAmbiguousToolListsFailTheGate: each of issue 30's attacks (the
// fixture's `ambiguous` server, whose read-only "peek" writes a file) gives
// an ambiguous-message finding and exit 1, and the scan judges the tool the
// TypeScript SDK reads: peek, with the hints JSON.parse reads.
func TestAmbiguousToolListsFailTheGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attack string
		flags  []string
		// kinds of server.ambiguities, in order
		kinds []string
		// readOnly is peek's readOnlyHint as judged (nil: no claim)
		readOnly *bool
		// refused: the ambiguities are on lines not given to the client
		refused bool
		// rule besides ambiguous-message peek raises
		rule string
	}{
		{attack: "case-hints", kinds: []string{"case-variant-key"}, readOnly: ptr(true), rule: "readonly-writes"},
		{attack: "name-decoy", kinds: []string{"case-variant-key"}, readOnly: ptr(true), rule: "readonly-writes"},
		{attack: "dup-hints", kinds: []string{"duplicate-key"}, readOnly: ptr(true), rule: "readonly-writes"},
		{attack: "proto-hints", kinds: []string{"proto-key"}},
		{attack: "string-hint", kinds: []string{"not-boolean"}},
		{attack: "id-float", kinds: []string{"id-form"}, readOnly: ptr(true), rule: "readonly-writes"},
		{attack: "id-string", kinds: []string{"id-form"}, readOnly: ptr(true), rule: "readonly-writes"},
		{attack: "refused", kinds: []string{"non-finite-number", "byte-order-mark", "trailing-data"}, readOnly: ptr(true), refused: true, rule: "readonly-writes"},
	} {
		t.Run(tc.attack, func(t *testing.T) {
			t.Parallel()
			code, b, stderr := scanFixture(t, append([]string{"--settle", "200ms"}, tc.flags...), "ambiguous", tc.attack)
			r := decode(t, b)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr %s", code, stderr)
			}
			var kinds []string
			for _, a := range r.Server.Ambiguities {
				kinds = append(kinds, a.Kind)
				if a.Refused != tc.refused {
					t.Errorf("%s: refused %v", a.Kind, a.Refused)
				}
				if strings.HasPrefix(a.Path, "result.tools") && a.Tool != "peek" {
					t.Errorf("%s at %s: tool %q, want peek", a.Kind, a.Path, a.Tool)
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("ambiguities %q, want %q: %+v", kinds, tc.kinds, r.Server.Ambiguities)
			}
			var names []string
			for _, tool := range r.Tools {
				names = append(names, tool.Name)
				if tool.Name == "peek" && !equalHint(tool.Hints.ReadOnly, tc.readOnly) {
					t.Errorf("peek's readOnlyHint judged %v, want %v", deref(tool.Hints.ReadOnly), deref(tc.readOnly))
				}
			}
			if !slices.Contains(names, "peek") {
				t.Fatalf("peek not listed: %q; problems %+v", names, r.Problems)
			}
			called := false
			for _, c := range r.Calls {
				called = called || c.Tool == "peek"
			}
			if !called {
				t.Errorf("peek was never called")
			}
			rules := map[string]bool{}
			for _, f := range r.Findings {
				rules[f.Rule+"/"+f.Tool] = true
			}
			want := "ambiguous-message/peek"
			if tc.refused || strings.HasPrefix(tc.attack, "id-") {
				want = "ambiguous-message/"
			}
			if !rules[want] {
				t.Errorf("no %s finding: %v", want, rules)
			}
			if tc.rule != "" && !rules[tc.rule+"/peek"] {
				t.Errorf("no %s finding on peek: %v", tc.rule, rules)
			}
		})
	}
}

// TestAmbiguousAnswerEndsTheCall: an answer only Python reads (NaN) is not
// given to the client: an error answers the call in its place at once,
// not at its timeout, and the place is recorded.
func TestAmbiguousAnswerEndsTheCall(t *testing.T) {
	t.Parallel()
	code, b, _ := scanFixture(t, []string{"--settle", "200ms", "--call-timeout", "60s"}, "ambiguous", "nan-call")
	r := decode(t, b)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if len(r.Server.Ambiguities) != 1 || r.Server.Ambiguities[0].Kind != "non-finite-number" || r.Server.Ambiguities[0].Method != "tools/call" || !r.Server.Ambiguities[0].Refused {
		t.Errorf("ambiguities %+v", r.Server.Ambiguities)
	}
	for _, c := range r.Calls {
		if c.Tool == "peek" && (c.ErrorKind == "timeout" || !strings.Contains(c.Error, "reads differently")) {
			t.Errorf("peek's call: kind %q, error %q", c.ErrorKind, c.Error)
		}
	}
}

// TestLiarPastTheToolBound: a liar listed after more honest tools than
// --max-tools is cut, said, and fails the gate.
func TestLiarPastTheToolBound(t *testing.T) {
	t.Parallel()
	code, b, _ := scanFixture(t, []string{"--max-tools", "20", "--settle", "200ms"}, "ambiguous", "many", "honest=30")
	r := decode(t, b)
	if code != 1 || !r.Server.ToolListTruncated || len(r.Tools) != 20 {
		t.Fatalf("exit %d, truncated %v, %d tools", code, r.Server.ToolListTruncated, len(r.Tools))
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.Rule == "tool-list-truncated"
	}
	if !found {
		t.Errorf("no tool-list-truncated finding")
	}
}

func ptr(b bool) *bool { return &b }

func equalHint(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

var _ = report.SeverityError
