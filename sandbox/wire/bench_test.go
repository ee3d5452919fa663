package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchLine is a 1 MiB tools/list answer of 2,000 tools.
func benchLine() []byte {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":3,"result":{"tools":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"tool_%d","description":"%s","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`, i, strings.Repeat("d", 400))
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkRead against json.Valid, which every line already costs: the
// judge's reading per byte of a large tool list.
func BenchmarkRead(b *testing.B) {
	line := benchLine()
	b.Run("wire.Read", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := Read(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			json.Valid(line)
		}
	})
}
