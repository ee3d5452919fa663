package bulk

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
)

// TestAttackCheckFileURLNonPublic: hosts that reach the loopback, the
// private network or a metadata service without being written as one
// of the literal forms checkFileURL parses.
func TestAttackCheckFileURLNonPublic(t *testing.T) {
	p := PyPI{IndexURL: "https://pypi.org/simple/"}
	for _, u := range []string{
		"https://localhost./x.whl",            // /etc/hosts: 127.0.0.1 (Go's resolver and glibc's)
		"https://LOCALHOST./x.whl",
		"https://localhost%2e/x.whl",          // the same, percent-encoded
		"https://2130706433/x.whl",            // 127.0.0.1 to getaddrinfo (inet_aton), WHATWG URLs
		"https://127.1/x.whl",                 // 127.0.0.1 likewise
		"https://0x7f.0.0.1/x.whl",            // likewise
		"https://0251.0376.0251.0376/x.whl",   // 169.254.169.254 in octal
		"https://100.100.100.200/x.whl",       // Alibaba Cloud's metadata service (100.64.0.0/10, shared)
		"https://[::a9fe:a9fe]/x.whl",         // IPv4-compatible 169.254.169.254
		"https://[64:ff9b::a9fe:a9fe]/x.whl",  // NAT64 of 169.254.169.254
		"https://[2002:a9fe:a9fe::]/x.whl",    // 6to4 of 169.254.169.254
	} {
		if err := p.checkFileURL(mustParse(u)); !errors.Is(err, ErrOffIndex) {
			t.Errorf("%s: allowed (%v)", u, err)
		}
	}
}

// TestAttackIndexMakesHostConnectToLoopback: an index page's link to
// https://localhost.:PORT makes the host connect to a loopback port that
// is not the index's, given a resolver that answers localhost. as RFC
// 6761 says (systemd-resolved's 127.0.0.53 does); here one on the
// loopback stands in for it, so no query leaves the machine.
func TestAttackIndexMakesHostConnectToLoopback(t *testing.T) {
	dns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := dns.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			end := 12
			for end < n && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5 // the root label, QTYPE, QCLASS
			if end > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[end-4:])
			resp := append([]byte{}, q[:2]...)
			resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0)
			resp = append(resp, q[12:end]...)
			if qtype == 1 { // A: 127.0.0.1
				binary.BigEndian.PutUint16(resp[6:], 1)
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
			}
			dns.WriteTo(resp, from)
		}
	}()
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", dns.LocalAddr().String())
	}}
	defer func() { net.DefaultResolver = old }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	good := pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": "def run(): pass\n"}, "", okEntry)
	name := pyindextest.WheelName("srv", "1.0")
	ix := &pyindextest.Index{Files: []pyindextest.File{{Name: name, Data: good, Href: "https://localhost.:" + port + "/" + name}}}
	p := pyInstaller(t, ix.Serve(t))
	_, err = p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"})
	if n := conns.Load(); n != 0 {
		t.Errorf("the host connected %d times to 127.0.0.1:%s, a port the index page named (err %v)", n, port, err)
	}
	if !errors.Is(err, ErrOffIndex) {
		t.Errorf("err %v, want ErrOffIndex", err)
	}
}
