package sandbox

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/probes"
)

// TestStderrSecretsWholeStream: a planted secret is found anywhere in the
// stderr stream, split over writes or long gone from the tail, and named,
// never kept as found text.
func TestStderrSecretsWholeStream(t *testing.T) {
	bait := probes.NewBait(3)
	b := &tailBuffer{max: 16, find: bait.Find}
	tok := bait.Tokens.GitHubToken
	io.WriteString(b, "start "+tok[:7])
	io.WriteString(b, tok[7:]+" then\n")
	io.WriteString(b, strings.Repeat("x", 10_000))
	if got := b.secrets(); !reflect.DeepEqual(got, []string{"github-token"}) {
		t.Errorf("secrets %v, want [github-token]", got)
	}
	clean := &tailBuffer{max: 16, find: bait.Find}
	io.WriteString(clean, strings.Repeat("nothing planted here ", 100))
	if got := clean.secrets(); len(got) != 0 {
		t.Errorf("clean stream: %v", got)
	}
}
