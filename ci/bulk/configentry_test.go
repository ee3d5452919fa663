package bulk

import (
	"errors"
	"testing"
)

// TestReadConfigEntry: the shapes of the clients' configurations.
func TestReadConfigEntry(t *testing.T) {
	for _, c := range []struct {
		doc, server, command string
		err                  error
	}{
		{`{"mcpServers":{"a":{"command":"npx","args":["-y","p"]}}}`, "", "npx", nil},
		{"\ufeff" + `{"servers":{"a":{"type":"stdio","command":"node"},"b":{"command":"uvx"}}}`, "b", "uvx", nil},
		{`{"mcpServers":{"a":{"command":"x"},"b":{"command":"y"}}}`, "", "", ErrNoSuchServer},
		{`{"mcpServers":{"a":{"command":"x"}}}`, "z", "", ErrNoSuchServer},
	} {
		e, err := ReadConfigEntry([]byte(c.doc), c.server)
		if !errors.Is(err, c.err) || (c.err == nil && e.Command != c.command) {
			t.Errorf("%s #%s: %+v %v", c.doc, c.server, e, err)
		}
	}
	if _, err := ReadConfigEntry([]byte(`{"x":1}`), ""); err == nil {
		t.Error("a document with no servers read")
	}
}
