//go:build linux && amd64

package agent

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// query builds a DNS query for name, type A.
func query(name string) []byte {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}

func TestDNSQuestionAndAnswers(t *testing.T) {
	q := query("telemetry.example.com")
	if name, ok := dnsQuestion(q); !ok || name != "telemetry.example.com" {
		t.Fatalf("dnsQuestion = %q %v", name, ok)
	}
	for _, bad := range [][]byte{nil, q[:11], append(q[:12:12], 0xc0, 0x0c)} {
		if _, ok := dnsQuestion(bad); ok {
			t.Errorf("dnsQuestion(%x) accepted", bad)
		}
	}
	nx := dnsAnswer(q, false)
	if nx[3]&0x0f != 3 || nx[7] != 0 {
		t.Errorf("none mode answer = %x, want NXDOMAIN with no answer", nx)
	}
	a := dnsAnswer(q, true)
	if a[3]&0x0f != 0 || a[7] != 0 {
		t.Errorf("sinkhole A answer = %x, want no record and no error (one family only)", a)
	}
	q6 := append(q[:len(q)-4:len(q)-4], 0, 28, 0, 1) // AAAA, IN
	a6 := dnsAnswer(q6, true)
	want6 := append([]byte{0, 28, 0, 1, 0, 0, 0, 30, 0, 16}, net.ParseIP("3fff::1").To16()...)
	if a6[3]&0x0f != 0 || a6[7] != 1 || !bytes.HasSuffix(a6, want6) {
		t.Errorf("sinkhole AAAA answer = %x, want one AAAA record of 3fff::1", a6)
	}
	mx := dnsAnswer(append(q[:len(q)-4:len(q)-4], 0, 15, 0, 1), true)
	if mx[3]&0x0f != 0 || mx[7] != 0 {
		t.Errorf("sinkhole MX answer = %x, want no record and no error", mx)
	}
	if ip := net.ParseIP(SinkIP); ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
		t.Errorf("sinkhole address %s is not a public-looking one: SSRF guards refuse it", SinkIP)
	}
}

// TestClientHelloSNI reads the SNI of a real ClientHello made by crypto/tls.
func TestClientHelloSNI(t *testing.T) {
	c, s := net.Pipe()
	go func() {
		tls.Client(c, &tls.Config{ServerName: "api.example.org"}).Handshake()
	}()
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := s.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.Close()
	if got := clientHelloSNI(buf[:n]); got != "api.example.org" {
		t.Errorf("SNI = %q", got)
	}
	if got := clientHelloSNI([]byte{0x16, 3, 1, 0, 5, 1}); got != "" {
		t.Errorf("SNI of a truncated hello = %q", got)
	}
}

// TestSinkholeReadsEveryRequest: a body past MaxPayload is marked
// truncated, a request pipelined behind another is recorded too, and
// bytes that are not HTTP are kept from their first.
func TestSinkholeReadsEveryRequest(t *testing.T) {
	var buf bytes.Buffer
	w := &writer{w: &buf, max: 100}
	c, s := net.Pipe()
	done := make(chan struct{})
	go func() { serveTCP(s, 80, w); close(done) }()
	go io.Copy(io.Discard, c) // the answers
	big := strings.Repeat("x", MaxPayload+10) + "MARK"
	fmt.Fprintf(c, "POST /a HTTP/1.1\r\nHost: one.example\r\nContent-Length: %d\r\n\r\n%s", len(big), big)
	fmt.Fprintf(c, "GET /second?k=SECRET HTTP/1.1\r\nHost: two.example\r\nConnection: close\r\n\r\n")
	<-done
	c.Close()

	c, s = net.Pipe()
	done = make(chan struct{})
	go func() { serveTCP(s, 80, w); close(done) }()
	c.Write([]byte("HELLO SECRET\r\n\r\nmore after a blank line"))
	c.Close()
	<-done
	w.tick()

	var evs []Event
	Decode(&buf, func(e Event) {
		if e.Kind == KindHTTP {
			evs = append(evs, e)
		}
	}, func([]byte) {})
	if len(evs) != 3 {
		t.Fatalf("events %+v", evs)
	}
	if evs[0].Path != "/a" || evs[0].Truncated != "payload" || bytes.Contains(evs[0].Payload, []byte("MARK")) {
		t.Errorf("over-long body: path %q truncated %q", evs[0].Path, evs[0].Truncated)
	}
	if evs[1].Path != "/second?k=SECRET" || evs[1].Host != "two.example" {
		t.Errorf("pipelined request: %+v", evs[1])
	}
	if evs[2].Result != "not http" || string(evs[2].Payload) != "HELLO SECRET\r\n\r\nmore after a blank line" {
		t.Errorf("not http: %q %q", evs[2].Result, evs[2].Payload)
	}
}
