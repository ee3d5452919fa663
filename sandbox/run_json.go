package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Editing a message in place: encoding/json compacts a RawMessage it
// marshals and sorts a map's keys, so a message the proxy rewrites would
// change everywhere. These keep every value they do not touch as it was
// sent, and the keys in their order.

// field is one member of a JSON object, its value as sent.
type field struct {
	Key string
	Val json.RawMessage
}

type object []field

// parseObject reads a JSON object, keeping its members' order and values.
func parseObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out object
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("a key that is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// get is the value of key (the last, as encoding/json reads duplicates).
func (o object) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Val, true
		}
	}
	return nil, false
}

// set replaces key's value (every duplicate), or adds it at the end.
func (o object) set(key string, v json.RawMessage) object {
	found := false
	for i := range o {
		if o[i].Key == key {
			o[i].Val, found = v, true
		}
	}
	if !found {
		o = append(o, field{key, v})
	}
	return o
}

// del removes key.
func (o object) del(key string) (object, bool) {
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

func (o object) encode() json.RawMessage {
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

// parseArray reads a JSON array, keeping its elements as sent.
func parseArray(b []byte) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, fmt.Errorf("not a JSON array")
	}
	var out []json.RawMessage
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

func encodeArray(vs []json.RawMessage) json.RawMessage {
	parts := make([][]byte, len(vs))
	for i, v := range vs {
		parts[i] = v
	}
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}
