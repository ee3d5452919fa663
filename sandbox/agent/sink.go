//go:build linux && amd64

package agent

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type sinks struct {
	closers []interface{ Close() error }
	// queries are the loopback resolver's queries the tracer has
	// reported already (see loopQueries).
	queries *loopQueries
}

// loopQueries holds the DNS queries to the loopback resolver that the
// tracer reported at the send's stop, before the kernel delivered them:
// the sink, which gets them a moment later, on another thread, does not
// report them again. Reported at the stop, a query lands in the stretch of
// the call that sent it; reported by the sink alone it could land after
// the call had answered (a query sent without waiting for the answer).
// The sink still reports what the tracer did not see (a write() on a
// connected socket).
type loopQueries struct {
	mu sync.Mutex
	m  map[string]int
}

// maxLoopQueries bounds the queries held; past it the set starts afresh
// (a query is then reported twice, never missed).
const maxLoopQueries = 4096

func newLoopQueries() *loopQueries { return &loopQueries{m: map[string]int{}} }

func (l *loopQueries) add(q []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= maxLoopQueries {
		clear(l.m)
	}
	l.m[string(q)]++
}

// taken says whether q was reported by the tracer, and forgets it once.
func (l *loopQueries) taken(q []byte) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.m[string(q)]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(l.m, string(q))
	} else {
		l.m[string(q)] = n - 1
	}
	return true
}

func (s *sinks) close() {
	for _, c := range s.closers {
		c.Close()
	}
}

// startSinks answers DNS on 127.0.0.1:53 (the container's resolver, set by
// the runner): NXDOMAIN in none mode, SinkIP in sinkhole mode; and in sinkhole mode accepts TCP on the common ports, recording TLS
// SNI and HTTP requests. Binding low ports needs the runner's
// net.ipv4.ip_unprivileged_port_start=0; a failure is reported, not fatal.
func startSinks(mode string, out *writer) *sinks {
	s := &sinks{queries: newLoopQueries()}
	if mode == ModeOpen {
		return s
	}
	pc, err := net.ListenPacket("udp4", sinkDNSAddr+":53")
	if err != nil {
		out.errorf("DNS sink: %v", err)
	} else {
		s.closers = append(s.closers, pc)
		go serveDNS(pc, mode, out, s.queries)
	}
	if mode != ModeSinkhole {
		return s
	}
	for _, port := range SinkPorts() {
		l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			out.errorf("sinkhole port %d: %v", port, err)
			continue
		}
		s.closers = append(s.closers, l)
		go func(port int) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go serveTCP(c, port, out)
			}
		}(port)
	}
	return s
}

func serveDNS(pc net.PacketConn, mode string, out *writer, reported *loopQueries) {
	// A datagram can be 64 KiB: all of it is read, every question reported.
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := buf[:n]
		names, more := dnsQuestions(q, MaxQuestions)
		if len(names) == 0 {
			continue
		}
		res := sinkResult(mode)
		if reported.taken(q) {
			names = nil // the tracer reported it at the send
		}
		trunc := ""
		if more {
			trunc = "questions"
		}
		for i, name := range names {
			ev := &Event{Kind: KindDNS, Host: name, Address: sinkDNSAddr, Port: 53, Protocol: "udp", Result: res, Truncated: trunc}
			if i == 0 {
				// The whole query once: a secret may ride in any of its parts.
				ev.Payload = append([]byte(nil), q...)
			}
			out.emit(ev)
		}
		if resp := dnsAnswer(q, mode == ModeSinkhole); resp != nil {
			pc.WriteTo(resp, from)
		}
	}
}

// sinkDNSAddr is where the agent's resolver listens (port 53, UDP): the
// container's /etc/resolv.conf names it in none and sinkhole modes.
const sinkDNSAddr = "127.0.0.1"

// sinkResult is what the loopback resolver does with a query.
func sinkResult(mode string) string {
	if mode == ModeSinkhole {
		return "sinkholed"
	}
	return "nxdomain"
}

// dnsAnswer answers a query: NXDOMAIN, or for sinkhole one AAAA record of
// SinkIP (other types, A among them, get an empty answer).
func dnsAnswer(q []byte, sinkhole bool) []byte {
	_, end, ok := readName(q, 12)
	if !ok || end+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	resp := append([]byte(nil), q[:end+4]...)
	resp[2] = 0x80 | (q[2] & 0x01) // QR, keep RD
	resp[3] = 0x80                 // RA
	binary.BigEndian.PutUint16(resp[4:], 1)
	binary.BigEndian.PutUint16(resp[8:], 0)
	binary.BigEndian.PutUint16(resp[10:], 0)
	if !sinkhole {
		resp[3] |= 3 // NXDOMAIN
		binary.BigEndian.PutUint16(resp[6:], 0)
		return resp
	}
	if qtype != dnsTypeAAAA {
		binary.BigEndian.PutUint16(resp[6:], 0)
		return resp
	}
	addr := net.ParseIP(SinkIP).To16()
	binary.BigEndian.PutUint16(resp[6:], 1)
	// The name by pointer to the question, the type, class IN, TTL 30 s.
	resp = append(resp, 0xc0, 12, byte(qtype>>8), byte(qtype), 0, 1, 0, 0, 0, 30, 0, byte(len(addr)))
	return append(resp, addr...)
}

// Bounds of the sinkhole's TCP side: how long a connection may stay
// silent, and how many requests one connection may make; each request's
// body is read up to MaxPayload.
const (
	sinkTimeout = 5 * time.Second
	sinkIdle    = 200 * time.Millisecond
	maxRequests = 64
)

// serveTCP records what a redirected connection says: a TLS
// ClientHello's SNI; or each HTTP request's method, Host, path, headers
// and body (answered 200 with a small page, the connection kept for the
// next); or, for
// anything else, what it sent until it paused. What passes a bound is
// marked truncated.
func serveTCP(c net.Conn, port int, out *writer) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(sinkTimeout))
	rec := &capped{max: MaxPayload}
	br := bufio.NewReader(io.TeeReader(c, rec))
	first, err := br.Peek(1)
	if err != nil {
		// Nothing sent: the connect is the record (at the seccomp stop,
		// on its call). An event here would land on the call or on the
		// next phase depending on when the client closed: the same
		// scenario would give two reports.
		return
	}
	if first[0] == 0x16 {
		// The whole first record (a TLS record is at most 16 KiB + 5):
		// the SNI may be anywhere in the extensions.
		hdr, err := br.Peek(5)
		size := 4096
		if err == nil {
			size = 5 + int(binary.BigEndian.Uint16(hdr[3:]))
		}
		hello := make([]byte, size)
		n, _ := io.ReadFull(br, hello)
		out.emit(&Event{Kind: KindTLS, Port: port, Protocol: "tcp", Host: clientHelloSNI(hello[:n])})
		return
	}
	for i := 0; i < maxRequests; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			if i == 0 {
				// Not HTTP: everything it sent, from its first byte.
				buf := make([]byte, 4096)
				for rec.n <= rec.max {
					c.SetReadDeadline(time.Now().Add(sinkIdle))
					if _, err := br.Read(buf); err != nil {
						break
					}
				}
				ev := &Event{Kind: KindHTTP, Port: port, Protocol: "tcp", Result: "not http", Payload: rec.b}
				if rec.n > rec.max {
					ev.Truncated = "payload"
				}
				out.emit(ev)
			}
			return
		}
		// Headers and body, bounded, for the runner to look for its
		// honeytokens.
		var head strings.Builder
		req.Header.Write(&head)
		body, _ := io.ReadAll(io.LimitReader(req.Body, MaxPayload+1))
		ev := &Event{Kind: KindHTTP, Port: port, Protocol: "tcp", Method: req.Method, Host: req.Host, Path: req.URL.RequestURI()}
		if len(body) > MaxPayload {
			body, ev.Truncated = body[:MaxPayload], "payload"
			io.Copy(io.Discard, req.Body)
		}
		if i == maxRequests-1 {
			ev.Truncated = addTrunc(ev.Truncated, "requests")
		}
		ev.Payload = append([]byte(head.String()), body...)
		out.emit(ev)
		c.Write(sinkResponse(req))
		if req.Close {
			return
		}
		c.SetDeadline(time.Now().Add(sinkTimeout))
	}
}

// The sinkhole's pages: the same for every host and path, so that a
// fetch-like tool gets a result (a 204 left most of them failing on an
// empty body) and the report does not depend on what was asked. Nothing
// of the request is echoed: a honeytoken in a URL stays in the request.
const (
	sinkHTML = "<!doctype html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>Welcome</title>\n</head>\n<body>\n<h1>Welcome</h1>\n<p>This site is up. There is nothing else here yet.</p>\n</body>\n</html>\n"
	sinkJSON = "{\"status\":\"ok\",\"message\":\"This site is up.\"}\n"
)

// sinkResponse answers req with 200 and a page: JSON when the client
// asks for it (Accept or a .json path), else HTML; no body for HEAD.
func sinkResponse(req *http.Request) []byte {
	body, ctype := sinkHTML, "text/html; charset=utf-8"
	if strings.Contains(req.Header.Get("Accept"), "json") || strings.HasSuffix(req.URL.Path, ".json") {
		body, ctype = sinkJSON, "application/json"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n", ctype, len(body))
	if req.Close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	if req.Method != http.MethodHead {
		b.WriteString(body)
	}
	return []byte(b.String())
}

// capped keeps the first max bytes written to it and counts them all.
type capped struct {
	b   []byte
	n   int
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	c.n += len(p)
	return len(p), nil
}

// clientHelloSNI returns the server_name of a TLS ClientHello record, or "".
func clientHelloSNI(b []byte) string {
	// record header (5), handshake header (4), version (2), random (32)
	off := 5 + 4 + 2 + 32
	if len(b) < off+1 || b[5] != 1 {
		return ""
	}
	off += 1 + int(b[off]) // session id
	if off+2 > len(b) {
		return ""
	}
	off += 2 + int(binary.BigEndian.Uint16(b[off:])) // cipher suites
	if off+1 > len(b) {
		return ""
	}
	off += 1 + int(b[off]) // compression methods
	if off+2 > len(b) {
		return ""
	}
	end := off + 2 + int(binary.BigEndian.Uint16(b[off:]))
	off += 2
	for off+4 <= len(b) && off+4 <= end {
		typ, n := binary.BigEndian.Uint16(b[off:]), int(binary.BigEndian.Uint16(b[off+2:]))
		off += 4
		if off+n > len(b) {
			return ""
		}
		if typ == 0 && n >= 5 { // server_name: list len, type, name len, name
			l := int(binary.BigEndian.Uint16(b[off+3:]))
			if off+5+l <= len(b) {
				return string(b[off+5 : off+5+l])
			}
			return ""
		}
		off += n
	}
	return ""
}
