package sandbox

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestHTTPClientReachesOnlyTheServersPort: the client the runner speaks
// to the server with connects to the server's port on the loopback and
// nowhere else, follows no redirect, sends the --header headers (Host
// replaced when given) and no Origin. Here the "container" is the
// runner's own namespace.
func TestHTTPClientReachesOnlyTheServersPort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN), as the HTTP transports do")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan *http.Request, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://example.com/", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})}
	go srv.Serve(l)
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port
	d, err := openNetns("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	s := &Session{netns: d, gate: newFrameGate(Bounds{}), transcript: NewTranscript(1 << 20),
		opts: SessionOptions{Transport: Transport{Kind: TransportHTTP, Port: port, Headers: http.Header{"Authorization": {"Bearer t"}}}}}
	hc := s.httpClient(port)
	ep := Transport{Path: "/mcp"}.endpoint(port)
	resp, err := hc.Post(ep, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("POST %s: %v", ep, err)
	}
	resp.Body.Close()
	r := <-seen
	if r.Host != "localhost:"+itoa(port) || r.Header.Get("Authorization") != "Bearer t" || r.Header.Get("Origin") != "" {
		t.Errorf("the server saw Host %q, Authorization %q, Origin %q", r.Host, r.Header.Get("Authorization"), r.Header.Get("Origin"))
	}
	resp, err = hc.Get(strings.Replace(ep, "/mcp", "/redirect", 1))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("a redirect: %v %v, want the 302 itself", resp, err)
	}
	resp.Body.Close()
	<-seen
	for _, u := range []string{"http://example.com/mcp", "http://localhost:1/mcp", "http://10.0.0.1:" + itoa(port) + "/mcp"} {
		if resp, err := hc.Get(u); err == nil || !strings.Contains(err.Error(), "only connects to the server's port") {
			t.Errorf("GET %s: %v %v, want refused", u, resp, err)
		}
	}
	s.opts.Transport.Headers.Set("Host", "127.0.0.1:"+itoa(port))
	if resp, err := s.httpClient(port).Get(ep); err == nil {
		resp.Body.Close()
	}
	if r := <-seen; r.Host != "127.0.0.1:"+itoa(port) {
		t.Errorf("Host %q, want the one --header gave", r.Host)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
