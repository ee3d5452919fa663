package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestUnmarshalIsCaseSensitive(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	if err := Unmarshal([]byte(`{"NAME":"decoy"}`), &v); err != nil || v.Name != "" {
		t.Fatalf("%v %q", err, v.Name)
	}
	if err := Unmarshal([]byte(`{"name":"a","name":"b"}`), &v); err != nil || v.Name != "b" {
		t.Fatalf("duplicates: %v %q", err, v.Name)
	}
	if err := Unmarshal([]byte(`{"name":"a"} x`), &v); err == nil {
		t.Fatal("trailing data taken")
	}
}

func TestIDs(t *testing.T) {
	for in, want := range map[string]string{`1`: "1", `-3`: "-3", `"1"`: `"1"`, `1.0`: "", `1e0`: "", `null`: "", `99999999999999999999`: "", `"a\ud800"`: ""} {
		if got := IDKey([]byte(in)); got != want {
			t.Errorf("IDKey(%s) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]float64{`1`: 1, `1.0`: 1, `1e0`: 1, `"1"`: 1, `" 1 "`: 1, `"0x10"`: 16, `"1e1"`: 10, `""`: 0, `"+.5"`: 0.5, `9007199254740993`: 9007199254740992} {
		if got, ok := JSNumber([]byte(in)); !ok || got != want {
			t.Errorf("JSNumber(%s) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{`"a"`, `"1_0"`, `"0x"`, `{}`, `"inf"`, `"-0x1"`} {
		if got, ok := JSNumber([]byte(in)); ok {
			t.Errorf("JSNumber(%s) = %v, want NaN", in, got)
		}
	}
}

// TestFieldsCoverGoSDK: every json field name of the go-sdk's protocol
// types is a protocol field here, so that a case variant of any of them
// is caught.
func TestFieldsCoverGoSDK(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeOf(mcp.Tool{}).PkgPath() {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && !fields[name] {
				t.Errorf("%s.%s: json field %q is not in protocolFields", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	for _, v := range []any{mcp.ListToolsResult{}, mcp.CallToolResult{}, mcp.InitializeResult{}, mcp.TextContent{}, mcp.ImageContent{},
		mcp.EmbeddedResource{}, mcp.ResourceLink{}, mcp.ListResourcesResult{}, mcp.ListPromptsResult{}, mcp.CreateMessageParams{},
		mcp.ElicitParams{}, mcp.ListRootsResult{}, mcp.LoggingMessageParams{}, mcp.ProgressNotificationParams{}} {
		walk(reflect.TypeOf(v))
	}
}
