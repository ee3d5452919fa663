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
	// Written a byte at a time across the point where a chunk is looked
	// through: found, and at a cost per byte that does not depend on it.
	bytewise := &tailBuffer{max: 16, find: bait.Find}
	io.WriteString(bytewise, strings.Repeat("y", secretChunk-10))
	for _, c := range []byte(bait.Tokens.AWSSecret) {
		bytewise.Write([]byte{c})
	}
	if got := bytewise.secrets(); !reflect.DeepEqual(got, []string{"aws-secret-access-key"}) {
		t.Errorf("bytewise: %v", got)
	}
	clean := &tailBuffer{max: 16, find: bait.Find}
	io.WriteString(clean, strings.Repeat("nothing planted here ", 100))
	if got := clean.secrets(); len(got) != 0 {
		t.Errorf("clean stream: %v", got)
	}
}
