package wire

import (
	"fmt"
	"testing"
)

// TestParseObjectKeepsBytes: members in their order, values as sent;
// what is not one object is refused.
func TestParseObjectKeepsBytes(t *testing.T) {
	in := `{ "a" : [1, {"b":"}"}] , "c\u0064":"x\"y", "e":{} ,"f":-1.5e3 }`
	o, err := ParseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(o)
	if want := `[{a [91 49 44 32 123 34 98 34 58 34 125 34 125 93]} {cd [34 120 92 34 121 34]} {e [123 125]} {f [45 49 46 53 101 51]}]`; got != want {
		t.Errorf("got %s", got)
	}
	for _, bad := range []string{`{"a":1`, `{"a" 1}`, `{"a":1,}`, `{"a":"x}`, `[1]`, `{"a":1} x`, `{a:1}`} {
		if _, err := ParseObject([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if a, err := ParseArray([]byte(` [ {"x":[]} , "]" ,3] `)); err != nil || len(a) != 3 || string(a[1]) != `"]"` {
		t.Errorf("array: %q %v", a, err)
	}
}
