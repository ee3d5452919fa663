package agent

import (
	"encoding/binary"
	"strings"
)

// dnsQuestion returns the first question's name of a DNS query.
func dnsQuestion(msg []byte) (string, bool) {
	if len(msg) < 12 || binary.BigEndian.Uint16(msg[4:]) == 0 {
		return "", false
	}
	name, _, ok := readName(msg, 12)
	return name, ok
}

// readName reads an uncompressed name (queries carry no pointers) and
// returns the offset after it.
func readName(msg []byte, off int) (string, int, bool) {
	var labels []string
	for steps := 0; off < len(msg) && steps < 128; steps++ {
		n := int(msg[off])
		off++
		if n == 0 {
			if len(labels) == 0 {
				return ".", off, true
			}
			return strings.Join(labels, "."), off, true
		}
		if n&0xc0 != 0 || off+n > len(msg) {
			return "", off, false
		}
		labels = append(labels, string(msg[off:off+n]))
		off += n
	}
	return "", off, false
}
