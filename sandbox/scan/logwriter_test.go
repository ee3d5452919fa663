package scan

import (
	"bytes"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestLogWriterRedacts: progress lines show roles and valid UTF-8.
func TestLogWriterRedacts(t *testing.T) {
	var buf bytes.Buffer
	w := &logWriter{w: &buf, ps: []report.Placeholder{{Value: "core-ledger-api", Role: "<project>", Word: true}, {Value: "AKIATESTTESTTEST1234", Role: "<aws-access-key-id>"}}}
	line := "call 1: read {\"path\":\"/workspace/core-ledger-api/x\",\"q\":\"\\ncore-ledger-api akiatesttesttest1234\"} \xff\n"
	if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("wrote %d, %v", n, err)
	}
	if want := "call 1: read {\"path\":\"/workspace/<project>/x\",\"q\":\"\\n<project> <aws-access-key-id>\"} \\xff\n"; buf.String() != want {
		t.Errorf("log %q\nwant %q", buf.String(), want)
	}
}

// TestLogWriterEscapesControls: a progress line that quotes a tool name
// with terminal sequences reaches the terminal escaped, its newline kept,
// the bait as its role.
func TestLogWriterEscapesControls(t *testing.T) {
	var out bytes.Buffer
	lw := &logWriter{w: &out, ps: []report.Placeholder{{Value: "s3cr3tv4lu3xyz", Role: "<aws-secret-access-key>"}}}
	line := "calling evil\x1b[2J\r\a\u009b tool with s3cr3tv4lu3xyz\n"
	if n, err := lw.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("write: %d %v", n, err)
	}
	if want := "calling evil\\x1b[2J\\x0d\\x07\\u009b tool with <aws-secret-access-key>\n"; out.String() != want {
		t.Errorf("%q, want %q", out.String(), want)
	}
}
