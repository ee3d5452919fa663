package k8sjob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// toYAML turns JSON into block-style YAML with go.yaml.in/yaml/v3, keeping
// the order of object keys (the order of the Go structs, so the output is
// stable): the JSON is read into a yaml.Node tree, which the encoder
// prints in the order it is built.
//
// Every string value is double-quoted, whatever it holds: no reader, YAML
// 1.2 or 1.1 (kubectl's), takes one for a number, a boolean or null. The
// encoder alone would leave `yes` and `on` plain, which kubectl reads as
// true, and `1:20`, which other YAML 1.1 readers read as 80. The encoder
// escapes what YAML does not allow raw (control characters, DEL, C1,
// U+FFFE, a BOM) and every line break (\n, \r, U+0085, U+2028, U+2029),
// and does not fold long lines.
func toYAML(js []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	n, err := toNode(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// toNode reads the next JSON value as a node.
func toNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if t == '[' {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, keyNode(k.(string)))
			}
			v, err := toNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := dec.Token(); err != nil { // '}' or ']'
			return nil, err
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle // {} or []
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Style: yaml.DoubleQuotedStyle}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// plainKey is a key every YAML reader reads as itself unquoted, unless it
// is one of YAML 1.1's words.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-/]*$`)

// keyNode is a key: plain when it is a name (every key of the manifest
// is), double-quoted otherwise.
func keyNode(k string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
	if !plainKey.MatchString(k) || isYAMLWord(k) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// isYAMLWord is a key YAML 1.1 readers would take for a boolean or null
// (the yaml.v3 encoder, a YAML 1.2 one, leaves most of them plain).
func isYAMLWord(k string) bool {
	switch strings.ToLower(k) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}
