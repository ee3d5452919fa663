package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Editing a message in place: encoding/json compacts a RawMessage it
// marshals and sorts a map's keys, so a message a proxy rewrites would
// change everywhere. These keep every value they do not touch as it was
// sent, and the keys in their order. They split a message at its
// members and never decode a value: a key is read with Unmarshal
// (case-sensitive, as the judge reads), and nothing else is interpreted.
// What the server sent is canonical by then (Read), so no key is
// there twice.

// Member is one member of a JSON object, its value as sent.
type Member struct {
	Key string
	Val json.RawMessage
}

// Object is a JSON object's members in their order, values as sent.
type Object []Member

var errNotJSON = errors.New("not JSON")

// ParseObject reads a JSON object, keeping its members' order and values.
func ParseObject(b []byte) (Object, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	i = skipSpace(b, i+1)
	out := Object{}
	if i < len(b) && b[i] == '}' {
		return out, trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, fmt.Errorf("a key that is not a string")
		}
		end, err := scanString(b, i)
		if err != nil {
			return nil, err
		}
		var k string
		if err := Unmarshal(b[i:end], &k); err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotJSON
		}
		i = skipSpace(b, i+1)
		vend, err := scanValue(b, i, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, Member{k, json.RawMessage(b[i:vend])})
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, errNotJSON
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return out, trailing(b, i+1)
		default:
			return nil, errNotJSON
		}
	}
}

// ParseArray reads a JSON array, keeping its elements as sent.
func ParseArray(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, fmt.Errorf("not a JSON array")
	}
	i = skipSpace(b, i+1)
	var out []json.RawMessage
	if i < len(b) && b[i] == ']' {
		return out, trailing(b, i+1)
	}
	for {
		end, err := scanValue(b, i, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(b[i:end]))
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, errNotJSON
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, trailing(b, i+1)
		default:
			return nil, errNotJSON
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errNotJSON
	}
	return nil
}

// scanString returns the end of the string literal at b[i].
func scanString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, errNotJSON
		}
	}
	return 0, errNotJSON
}

// scanValue returns the end of the value at b[i]. Its scalars are only
// delimited, not checked: the messages edited here are JSON already.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) || depth > MaxDepth {
		return 0, errNotJSON
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := skipSpace(b, i+1)
		if j < len(b) && b[j] == closer {
			return j + 1, nil
		}
		for {
			if b[i] == '{' {
				if j >= len(b) || b[j] != '"' {
					return 0, errNotJSON
				}
				end, err := scanString(b, j)
				if err != nil {
					return 0, err
				}
				j = skipSpace(b, end)
				if j >= len(b) || b[j] != ':' {
					return 0, errNotJSON
				}
				j = skipSpace(b, j+1)
			}
			end, err := scanValue(b, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipSpace(b, end)
			if j >= len(b) {
				return 0, errNotJSON
			}
			if b[j] == closer {
				return j + 1, nil
			}
			if b[j] != ',' {
				return 0, errNotJSON
			}
			j = skipSpace(b, j+1)
		}
	}
	j := i
	for j < len(b) && !bytes.ContainsRune([]byte(",]} \t\r\n"), rune(b[j])) {
		j++
	}
	if j == i {
		return 0, errNotJSON
	}
	return j, nil
}

// Get is the value of key (the last, as every reader takes duplicates).
func (o Object) Get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Val, true
		}
	}
	return nil, false
}

// Set replaces key's value (every duplicate), or adds it at the end.
func (o Object) Set(key string, v json.RawMessage) Object {
	found := false
	for i := range o {
		if o[i].Key == key {
			o[i].Val, found = v, true
		}
	}
	if !found {
		o = append(o, Member{key, v})
	}
	return o
}

// Del removes key.
func (o Object) Del(key string) (Object, bool) {
	out, did := o[:0], false
	for _, f := range o {
		if f.Key == key {
			did = true
			continue
		}
		out = append(out, f)
	}
	return out, did
}

func (o Object) Encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.Val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func EncodeArray(vs []json.RawMessage) json.RawMessage {
	parts := make([][]byte, len(vs))
	for i, v := range vs {
		parts[i] = v
	}
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// ReplaceMember is line (one JSON object and its newline) with key's value
// replaced by v, everything else as sent.
func ReplaceMember(line []byte, key string, v json.RawMessage) ([]byte, error) {
	m, err := ParseObject(line)
	if err != nil {
		return nil, err
	}
	return append(m.Set(key, v).Encode(), '\n'), nil
}
