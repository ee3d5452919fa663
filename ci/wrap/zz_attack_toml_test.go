package wrap

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAttackWrapTOMLQuadratic: each multi-line string copies the rest of
// the document (string(d[i:])), so a config of many of them takes time
// quadratic in its size.
func TestAttackWrapTOMLQuadratic(t *testing.T) {
	for _, n := range []int{10_000, 40_000} {
		var b strings.Builder
		b.WriteString("[mcp_servers.x]\ncommand = \"npx\"\n[notes]\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "k%d = \"\"\"v\"\"\"\n", i)
		}
		start := time.Now()
		_, _, err := WrapTOML([]byte(b.String()), "/bin/m", nil)
		d := time.Since(start)
		t.Logf("%d strings, %d KB: %v (%v)", n, b.Len()>>10, d, err)
	}
}

// TestAttackWrapTOMLNaN: a NaN anywhere in the file makes the proof
// (reflect.DeepEqual) fail, so the file is refused.
func TestAttackWrapTOMLNaN(t *testing.T) {
	doc := "threshold = nan\n[mcp_servers.x]\ncommand = \"npx\"\n"
	if _, _, err := WrapTOML([]byte(doc), "/bin/m", nil); err != nil {
		t.Errorf("refused: %v", err)
	}
}
