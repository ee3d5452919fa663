package k8sjob

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// hostileStrings are values a package name, an image or a bulk argument
// could carry into the manifest: YAML syntax, words and numbers YAML 1.1
// or 1.2 resolves to another type, control characters, line breaks of
// either version, and long lines an encoder might fold.
func hostileStrings() []string {
	return []string{
		"", " ", " leading", "trailing ", "  ",
		"a\nb", "a\n", "\n", "\n\nx\n\n", "a\r\nb", "\r", "a\rb",
		"key: value", "a:b", "a #b", "#c", "- x", "-", "--", "---", "...", "--- x",
		"? x", "{a: 1}", "{", "}", "[1, 2]", "]", ",", "&anchor", "*alias",
		"!tag", "!!str", "!!int 1", "%YAML 1.1", "@x", "`x", "|", "|-\n  x", ">", "'", "''", `"`, `\`, `\n`, `\"`,
		"yes", "no", "on", "off", "y", "n", "Y", "N", "Yes", "NO", "On", "OFF",
		"true", "True", "FALSE", "null", "Null", "NULL", "~",
		"0", "-0", "+1", "007", "017", "0o17", "0x1F", "0X1f", "0b101", "1_000",
		"1e3", "1E3", "-1.5e-3", "3.14", ".5", "5.", ".inf", "-.Inf", "+.INF", ".nan", ".NaN",
		"1:20", "190:20:30.15", "2001-12-14", "2001-12-14 21:59:43.10 -5", "2001-12-14t21:59:43.10-05:00",
		"=", "<<", "<<: *a",
		"\x00", "nul\x00inside", "\x01\x02\x1f", "\x07\x08\x0b\x0c", "\x7f", "\x1b[31mred\x1b[0m", "\t", "a\tb", "\t\n",
		"\u0080", "\u0085", "a\u0085b", "\u009f", "\u00a0", "\u2028", "\u2029", "x\u2028y\u2029z",
		"\ufeff", "a\ufeffb", "\ufffe", "\uffff", "\ufffd", "\u200b", "\u202e", "😀", "\U0010FFFF",
		"<script>&amp;</script>", "$HOME", "%s", "a=b", "--flag=x y",
		strings.Repeat("a b ", 1<<15),
		strings.Repeat("x", 1<<18),
		strings.Repeat("line \u2028 \\ \"q\"\n", 2000),
	}
}

// TestHostileStringsReadBack: whatever a string holds, a YAML reader
// reads the manifest's value back as the same string, and every string
// value is double-quoted, so that no reader, YAML 1.1 or 1.2, resolves
// it to something else (the strict decoding into the Kubernetes types,
// with kubectl's reader, is in k8stest).
func TestHostileStringsReadBack(t *testing.T) {
	for _, s := range hostileStrings() {
		js, err := json.Marshal(map[string]any{"value": s, "list": []string{s, "end"}, s: "as a key", "z": map[string]string{s: s}})
		if err != nil {
			t.Fatal(err)
		}
		y, err := toYAML(js)
		if err != nil {
			t.Fatalf("%.40q: %v", s, err)
		}
		var got map[string]any
		if err := yaml.Unmarshal(y, &got); err != nil {
			t.Errorf("%.40q: reading back: %v\n%.400q", s, err, y)
			continue
		}
		want := map[string]any{"value": s, "list": []any{s, "end"}, s: "as a key", "z": map[string]any{s: s}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%.40q: read back as %.200q\n%.400q", s, got, y)
		}
		checkYAML(t, s, y)
	}
}

// checkYAML holds the printed YAML to what makes it read the same in
// every reader: no character YAML forbids or reads as a line break other
// than \n (YAML 1.1 takes U+0085, U+2028 and U+2029 for breaks, 1.2 does
// not), and every string value double-quoted.
func checkYAML(t *testing.T, what string, y []byte) {
	t.Helper()
	if !utf8.Valid(y) {
		t.Errorf("%.40q: the YAML is not UTF-8", what)
	}
	for i, r := range string(y) {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff {
			t.Errorf("%.40q: raw %U at byte %d of the YAML", what, r, i)
			return
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(y, &doc); err != nil {
		t.Errorf("%.40q: %v", what, err)
		return
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		values := n.Content
		if n.Kind == yaml.MappingNode {
			values = nil
			for i := 1; i < len(n.Content); i += 2 {
				values = append(values, n.Content[i])
			}
		}
		for _, v := range values {
			if v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Style != yaml.DoubleQuotedStyle {
				t.Errorf("%.40q: string value %.40q at line %d is not double-quoted", what, v.Value, v.Line)
			}
			walk(v)
		}
	}
	walk(&doc)
}

// TestHostileOptionsKeepTheManifest: hostile strings in every option the
// manifest carries as given (the images, the engine's resources, bulk's
// arguments) leave a manifest that reads back, whole, as the JSON of the
// Job: the YAML says what the structs say, and nothing more.
func TestHostileOptionsKeepTheManifest(t *testing.T) {
	o := exampleOptions()
	o.BulkArgs = hostileStrings()
	cases := []Options{o}
	for _, s := range hostileStrings() {
		if s == "" {
			continue // no image is refused, and no CPU or memory is left out
		}
		o := exampleOptions()
		o.Image, o.DindImage, o.CPU, o.Memory = s, s, s, s
		o.BulkArgs = []string{s}
		cases = append(cases, o)
	}
	for _, o := range cases {
		var b bytes.Buffer
		if err := Write(&b, o); err != nil {
			t.Fatalf("%.40q: %v", o.Image, err)
		}
		js, err := json.Marshal(build(o.withDefaults()))
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		var y any
		if err := yaml.Unmarshal(b.Bytes(), &y); err != nil {
			t.Errorf("%.40q: reading the manifest: %v", o.Image, err)
			continue
		}
		// Through JSON, so that YAML's ints compare with JSON's numbers.
		yj, err := json.Marshal(y)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(yj, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%.40q: the manifest reads back as\n%.2000s\nnot\n%.2000s", o.Image, yj, js)
		}
		checkYAML(t, o.Image, b.Bytes())
	}
}
