package sandbox

import (
	"errors"
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestParseAllowHost(t *testing.T) {
	for in, want := range map[string]AllowHost{
		"api.example.com":       {Host: "api.example.com"},
		"API.Example.com.:8443": {Host: "api.example.com", Port: 8443},
		"127.0.0.1:5000":        {Host: "127.0.0.1", Port: 5000},
		"[::1]:5000":            {Host: "::1", Port: 5000},
		"localhost":             {Host: "localhost"},
	} {
		got, err := ParseAllowHost(in)
		if err != nil || got != want {
			t.Errorf("ParseAllowHost(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10.0.0.5", "93.184.216.34:443", "a.com:0", "a.com:70000", "a b.com", "a.com:x", "-", "*.example.com"} {
		if got, err := ParseAllowHost(bad); !errors.Is(err, ErrAllowHost) {
			t.Errorf("ParseAllowHost(%q) = %+v, %v; want an error", bad, got, err)
		}
	}
}

// TestPlanAllowHosts: names get loopback aliases in sorted order (the
// same flags, the same addresses), loopback addresses listen as they
// are, a host without a port opens the default ports.
func TestPlanAllowHosts(t *testing.T) {
	p, err := planAllowHosts([]AllowHost{{Host: "b.test", Port: 9000}, {Host: "a.test"}, {Host: "127.0.0.1", Port: 5000}, {Host: "b.test", Port: 9000}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.test:127.77.0.1", "b.test:127.77.0.2"}; !slices.Equal(p.extraHosts, want) {
		t.Errorf("extra hosts %v, want %v", p.extraHosts, want)
	}
	var listens []string
	for _, r := range p.routes {
		listens = append(listens, r.listen)
	}
	if want := []string{"127.0.0.1:5000", "127.77.0.1:443", "127.77.0.1:80", "127.77.0.2:9000"}; !slices.Equal(listens, want) {
		t.Errorf("listeners %v, want %v", listens, want)
	}
	if h, ok := p.lookup("127.77.0.2", 9000); !ok || h.Host != "b.test" {
		t.Errorf("lookup = %v %v", h, ok)
	}
	if _, ok := p.lookup("127.77.0.2", 9001); ok {
		t.Error("another port of an allowed name is not allowed")
	}
	if _, ok := p.lookup("127.0.0.1", 80); ok {
		t.Error("the container's own loopback is not an allowed host")
	}
	ne := report.NetEvent{Kind: "connect", Address: "127.77.0.2", Port: 9000, Result: "EINPROGRESS", Loopback: true}
	allowedEvent(&ne, AllowHost{Host: "b.test", Port: 9000})
	if ne.Loopback || ne.Host != "b.test" || ne.Address != "b.test" || ne.Result != "allowed:EINPROGRESS" {
		t.Errorf("allowed event %+v", ne)
	}
}
