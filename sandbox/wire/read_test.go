package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func kinds(as []Ambiguity) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind.String()+"@"+a.Path+"/"+a.Key)
	}
	return out
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // kind@path/key
		canon    string   // "" when refused
	}{
		{"plain", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`, nil, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`},
		{"spaces kept out", " {\"a\" : [1 , 2] }\r\n", nil, `{"a":[1,2]}`},
		{"case variant", `{"tools":[{"name":"peek","annotations":{"readOnlyHint":true},"ANNOTATIONS":{}}]}`,
			[]string{"case-variant-key@tools[0]/ANNOTATIONS"}, `{"tools":[{"name":"peek","annotations":{"readOnlyHint":true}}]}`},
		{"name decoy", `{"tools":[{"name":"peek","NAME":"peek_decoy"}]}`,
			[]string{"case-variant-key@tools[0]/NAME"}, `{"tools":[{"name":"peek"}]}`},
		{"unicode fold", `{"tools":[{"name":"a","deſcription":"x"}]}`,
			[]string{"case-variant-key@tools[0]/deſcription"}, `{"tools":[{"name":"a"}]}`},
		{"kelvin", `{"tools":[{"name":"a","annotations":{"readOnlyHint":false,"readOnlyHint":true}}]}`,
			[]string{"duplicate-key@tools[0].annotations/readOnlyHint"}, `{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}]}`},
		{"property names are names", `{"inputSchema":{"type":"object","properties":{"name":{},"NAME":{},"Type":{"TYPE":"x"}}}}`,
			[]string{"case-variant-key@inputSchema.properties.Type/TYPE"}, `{"inputSchema":{"type":"object","properties":{"name":{},"NAME":{},"Type":{}}}}`},
		{"opaque", `{"structuredContent":{"NAME":1,"__proto__":2}}`, []string{"proto-key@structuredContent/__proto__"}, `{"structuredContent":{"NAME":1}}`},
		{"proto", `{"annotations":{"__proto__":{"readOnlyHint":true}}}`, []string{"proto-key@annotations/__proto__"}, `{"annotations":{}}`},
		{"nan", `{"id":1,"result":{"x":NaN}}`, []string{"non-finite-number@result.x/"}, ""},
		{"-inf", `{"x":-Infinity}`, []string{"non-finite-number@x/"}, ""},
		{"overflow", `{"x":1e400}`, []string{"number-overflow@x/"}, ""},
		{"big int", `{"id":9007199254740993}`, []string{"imprecise-integer@id/"}, `{"id":9007199254740992}`},
		{"big int exact", `{"id":9007199254740992}`, nil, `{"id":9007199254740992}`},
		{"lone surrogate", `{"name":"peek\ud800"}`, []string{"lone-surrogate@name/"}, "{\"name\":\"peek\ufffd\"}"},
		{"pair", `{"name":"\ud83d\ude00"}`, nil, "{\"name\":\"\U0001F600\"}"},
		{"invalid utf8", "{\"name\":\"pe\xffek\"}", []string{"invalid-utf8@name/"}, "{\"name\":\"pe\ufffdek\"}"},
		{"bom", "\xef\xbb\xbf{\"id\":1}", []string{"byte-order-mark@/"}, ""},
		{"trailing", `{"id":1} {"id":2}`, []string{"trailing-data@/"}, ""},
		{"escaped key", `{"n\u0061me":"a","name":"b"}`, []string{"duplicate-key@/name"}, `{"name":"b"}`},
		{"string hint", `{"tools":[{"name":"a","annotations":{"readOnlyHint":"true","destructiveHint":1,"idempotentHint":null,"openWorldHint":false}}]}`,
			[]string{"not-boolean@tools[0].annotations/readOnlyHint", "not-boolean@tools[0].annotations/destructiveHint", "not-boolean@tools[0].annotations/idempotentHint"},
			`{"tools":[{"name":"a","annotations":{"openWorldHint":false}}]}`},
		{"extra envelope key", `{"jsonrpc":"2.0","id":1,"result":{},"note":"x"}`, []string{"extra-envelope-key@/note"}, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"line separator", "{\"a\":\"x\u2028y\"}", nil, `{"a":"x\u2028y"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Read([]byte(tc.in))
			if got := kinds(r.Found); !slices.Equal(got, tc.want) {
				t.Errorf("found %q, want %q", got, tc.want)
			}
			if tc.canon == "" {
				if err == nil {
					t.Errorf("not refused: %s", r.Canonical)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Canonical) != tc.canon {
				t.Errorf("canonical\n%s, want\n%s", r.Canonical, tc.canon)
			}
			if r2, err := Read(r.Canonical); err != nil || r2.Ambiguous() || string(r2.Canonical) != string(r.Canonical) {
				t.Errorf("canonical is not a fixed point: %v %v %s", err, r2.Found, r2.Canonical)
			}
			if !json.Valid(r.Canonical) {
				t.Errorf("canonical is not JSON")
			}
		})
	}
}

func TestInvalidIsRefusedWithoutAmbiguity(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":01}`, `{"a":+1}`, `{"a":.5}`, `{'a':1}`, "{\"a\":\"\t\"}", `[1,]`, `{"a":1,}`, `tru`} {
		r, err := Read([]byte(in))
		if err == nil || r.Ambiguous() {
			t.Errorf("%q: err %v, found %v", in, err, r.Found)
		}
	}
}

func TestFloodIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"a":0`)
	for range 1000 {
		b.WriteString(`,"a":0`)
	}
	b.WriteString(`}`)
	r, err := Read([]byte(b.String()))
	if err != nil || len(r.Found) != MaxKept || r.All != 1000 || string(r.Canonical) != `{"a":0}` {
		t.Fatalf("err %v kept %d all %d canon %s", err, len(r.Found), r.All, r.Canonical)
	}
}

func TestDeepIsRefused(t *testing.T) {
	in := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	if _, err := Read([]byte(in)); err == nil {
		t.Fatal("not refused")
	}
}
