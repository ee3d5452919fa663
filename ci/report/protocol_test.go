package report

import "testing"

func TestToolAnnotationsIn(t *testing.T) {
	for v, want := range map[string]bool{"2024-11-05": false, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true, "2026-07-28": true, "": true} {
		if got := ToolAnnotationsIn(v); got != want {
			t.Errorf("ToolAnnotationsIn(%q) = %v, want %v", v, got, want)
		}
	}
}
