package probes

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestNegativesBreakOneRuleEach(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"key":{"type":"string","maxLength":8},
		"count":{"type":"integer","minimum":1,"maximum":10},
		"mode":{"type":"string","enum":["a","b"]},
		"on":{"type":"boolean"}},
		"required":["key","count"],"additionalProperties":false}`)
	valid, err := Synthesize(schema)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range Negatives(schema, valid) {
		got = append(got, n.Violation)
		if Validate(schema, n.Arguments) == nil {
			t.Errorf("%s: %s validates", n.Violation, n.Arguments)
		}
	}
	want := []string{
		`required property "key" dropped`,
		`required property "count" dropped`,
		`property "count" of the wrong type (a string, not an integer)`,
		`property "count" below its minimum 1`,
		`property "count" above its maximum 10`,
		`property "key" of the wrong type (a number, not a string)`,
		`property "key" longer than its maxLength 8`,
		`property "mode" of the wrong type (a number, not a string)`,
		`property "mode" outside its enum`,
		`property "on" of the wrong type (a string, not a boolean)`,
		`an extra property where additionalProperties is false`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("negatives:\n got %q\nwant %q", got, want)
	}
	if n := Negatives(json.RawMessage(`{"type":"object"}`), json.RawMessage(`{}`)); len(n) != 0 {
		t.Errorf("a schema with no rules has negatives: %+v", n)
	}
}
