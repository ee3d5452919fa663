package agent

import (
	"encoding/binary"
	"strings"
)

// SinkIP is the one address the sinkhole's DNS answers every name with (an
// AAAA record; an A query gets no record and no error). It is from the
// documentation range 3fff::/20 (RFC 9637), so no real host is named, and
// it is neither loopback, private nor link-local, nor in the older
// 2001:db8::/32 or 192.0.2.0/24 that common guards (private-ip) refuse, so
// a client's SSRF guard lets the request go on to the sinkhole (the agent
// redirects every TCP connect that is not to the loopback). One family
// only: with an A record too, which of the two a dialer connects to
// (happy eyeballs, the resolver's sort) depends on timing, and the report
// would not be the same from one run to the next.
const SinkIP = "3fff::1"

// dnsTypeAAAA is the one DNS record type the sinkhole answers.
const dnsTypeAAAA = 28

// dnsQuestion returns the first question's name of a DNS query.
func dnsQuestion(msg []byte) (string, bool) {
	names, _ := dnsQuestions(msg, 1)
	if len(names) == 0 {
		return "", false
	}
	return names[0], true
}

// dnsQuestions returns the names of a DNS message's questions (QDCOUNT of
// them, at most max; more is set when there were more).
func dnsQuestions(msg []byte, max int) (names []string, more bool) {
	if len(msg) < 12 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(msg[4:]))
	off := 12
	for i := 0; i < n; i++ {
		if i == max {
			return names, true
		}
		name, end, ok := readName(msg, off)
		if !ok || end+4 > len(msg) {
			return names, false
		}
		names = append(names, name)
		off = end + 4 // QTYPE, QCLASS
	}
	return names, false
}

// readName reads a name at off, following compression pointers (bounded:
// a later question may point into an earlier one), and returns the offset
// after it in place.
func readName(msg []byte, off int) (string, int, bool) {
	var labels []string
	end := -1
	for steps := 0; off < len(msg) && steps < 128; steps++ {
		n := int(msg[off])
		off++
		switch {
		case n == 0:
			if end < 0 {
				end = off
			}
			if len(labels) == 0 {
				return ".", end, true
			}
			return strings.Join(labels, "."), end, true
		case n&0xc0 == 0xc0:
			if off >= len(msg) {
				return "", off, false
			}
			if end < 0 {
				end = off + 1
			}
			off = (n&0x3f)<<8 | int(msg[off])
		case n&0xc0 != 0 || off+n > len(msg):
			return "", off, false
		default:
			labels = append(labels, string(msg[off:off+n]))
			off += n
		}
	}
	return "", off, false
}
