package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Allowed hosts (--allow-host HOST[:PORT]): the server may reach these
// and nothing else. The container keeps no network; the runner forwards.
// Each allowed name is given an address of its own on the container's
// loopback (127.77.0.N, in the container's /etc/hosts, which resolvers
// read before asking DNS), and the runner listens there, inside the
// container's network namespace, on the allowed ports. A connection it
// accepts is dialled again from the runner's own namespace, to the real
// host, and the bytes copied both ways. A loopback address (127.0.0.1,
// ::1, localhost) means the host's own loopback: the runner listens on
// the same address in the container. The agent records the server's
// connect as any other; the report shows it with the allowed host's name
// and the result "allowed:ok" (see allowedEvent), so the rules judge it as
// a connection out. Everything else stays refused or sinkholed as the
// network mode says. See docs/run.md "Run workspaces, named runs, allowed
// hosts".

// AllowHost is one host the server may reach.
type AllowHost struct {
	// Host is a name or an IP address, as given.
	Host string
	// Port is the one port allowed; 0 allows DefaultAllowPorts.
	Port int
}

// DefaultAllowPorts are the ports an --allow-host without a port opens.
var DefaultAllowPorts = []int{443, 80}

func (a AllowHost) String() string {
	if a.Port == 0 {
		return a.Host
	}
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// ports are the ports allowed.
func (a AllowHost) ports() []int {
	if a.Port == 0 {
		return DefaultAllowPorts
	}
	return []int{a.Port}
}

// ErrAllowHost marks an --allow-host value that cannot be used.
var ErrAllowHost = errors.New("bad --allow-host")

// ParseAllowHost reads HOST, HOST:PORT, IPv6 or [IPv6]:PORT. A name is
// kept lower-case; an IP address other than a loopback one is refused:
// the server reaches an allowed host by its name (a bare address would
// need an address of the host's on the container's loopback).
func ParseAllowHost(s string) (AllowHost, error) {
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return AllowHost{}, fmt.Errorf("%w %q: port %q is not 1-65535", ErrAllowHost, s, p)
		}
		host, port = h, n
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return AllowHost{}, fmt.Errorf("%w %q: give the host's name, not an address (only loopback addresses are forwarded by address)", ErrAllowHost, s)
		}
		return AllowHost{Host: ip.String(), Port: port}, nil
	}
	if !validHostname(host) {
		return AllowHost{}, fmt.Errorf("%w %q: not a host name", ErrAllowHost, s)
	}
	return AllowHost{Host: host, Port: port}, nil
}

// validHostname: labels of letters, digits, '-' and '_', 1-63 bytes
// each, 253 in all.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// allowAliasNet is where allowed names get their container addresses:
// 127.77.0.1 on, inside the loopback's 127.0.0.0/8, unused by anything.
var allowAliasNet = [3]byte{127, 77, 0}

// maxAllowHosts bounds the allowed names (the aliases' last byte).
const maxAllowHosts = 250

// allowRoute is one address and port the runner listens on in the
// container, and where it goes.
type allowRoute struct {
	listen string // ip:port in the container
	host   AllowHost
	port   int
}

// allowPlan is what the allowed hosts make of a container: its extra
// /etc/hosts lines and the runner's listeners.
type allowPlan struct {
	extraHosts []string // "name:ip", as the engine takes them
	routes     []allowRoute
	// byAddr finds the allowed host of a container address and port.
	byAddr map[string]AllowHost
}

// planAllowHosts gives each allowed name its container address, in the
// order of the names sorted, so that the same flags give the same
// addresses (and the same report).
func planAllowHosts(hosts []AllowHost) (allowPlan, error) {
	p := allowPlan{byAddr: map[string]AllowHost{}}
	hs := slices.Clone(hosts)
	slices.SortFunc(hs, func(a, b AllowHost) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	alias := map[string]string{}
	var names []string
	for _, h := range hs {
		ip := h.Host
		if h.Host == "localhost" {
			ip = "127.0.0.1"
		} else if net.ParseIP(h.Host) == nil {
			a, ok := alias[h.Host]
			if !ok {
				if len(names) >= maxAllowHosts {
					return allowPlan{}, fmt.Errorf("%w: more than %d host names", ErrAllowHost, maxAllowHosts)
				}
				names = append(names, h.Host)
				a = net.IPv4(allowAliasNet[0], allowAliasNet[1], allowAliasNet[2], byte(len(names))).String()
				alias[h.Host] = a
				p.extraHosts = append(p.extraHosts, h.Host+":"+a)
			}
			ip = a
		}
		for _, port := range h.ports() {
			addr := net.JoinHostPort(ip, strconv.Itoa(port))
			if _, dup := p.byAddr[addr]; dup {
				continue
			}
			p.byAddr[addr] = h
			p.routes = append(p.routes, allowRoute{listen: addr, host: h, port: port})
		}
	}
	return p, nil
}

// lookup is the allowed host a connection to addr:port in the container
// goes to.
func (p allowPlan) lookup(addr string, port int) (AllowHost, bool) {
	ip := net.ParseIP(addr)
	if ip == nil {
		return AllowHost{}, false
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	h, ok := p.byAddr[net.JoinHostPort(ip.String(), strconv.Itoa(port))]
	return h, ok
}

// allowedEvent rewrites the agent's record of a connection to an allowed
// host's listener: not the loopback, but the host, reached through the
// runner.
func allowedEvent(ne *report.NetEvent, h AllowHost) {
	ne.Address, ne.Loopback = h.Host, false
	if net.ParseIP(h.Host) == nil {
		ne.Host = h.Host
	}
	ne.Result = "allowed:" + ne.Result
}

// DefaultMaxAllowConns bounds the connections the runner forwards at
// once; past it a connection is closed at once, counted, and reported.
const DefaultMaxAllowConns = 64

// allowDialTimeout bounds the runner's dial of an allowed host.
const allowDialTimeout = 10 * time.Second

// DialFunc dials a host from the runner (for tests: a resolver of
// their own).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// allowForward is the runner's side: the listeners in the container and
// the connections they took.
type allowForward struct {
	plan  allowPlan
	dial  DialFunc
	slots chan struct{}
	ls    []net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	forwarded, overBound, failed atomic.Int64
	lastErr                      atomic.Value // string
}

// serve accepts on l until it is closed.
func (f *allowForward) serve(l net.Listener, r allowRoute) {
	defer f.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		select {
		case f.slots <- struct{}{}:
		default:
			f.overBound.Add(1)
			c.Close()
			continue
		}
		if !f.track(c) {
			<-f.slots
			c.Close()
			return
		}
		f.wg.Add(1)
		go f.relay(c, r)
	}
}

func (f *allowForward) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *allowForward) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// relay dials the allowed host and copies both ways until either side
// ends.
func (f *allowForward) relay(in net.Conn, r allowRoute) {
	defer f.wg.Done()
	defer func() { <-f.slots }()
	defer f.untrack(in)
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), allowDialTimeout)
	out, err := f.dial(ctx, "tcp", net.JoinHostPort(r.host.Host, strconv.Itoa(r.port)))
	cancel()
	if err != nil {
		f.failed.Add(1)
		f.lastErr.Store(report.OneLine(err.Error()))
		return
	}
	if !f.track(out) {
		out.Close()
		return
	}
	defer f.untrack(out)
	defer out.Close()
	f.forwarded.Add(1)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
}

// close ends the listeners and every connection, and waits for them.
func (f *allowForward) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.closed = true
	for _, l := range f.ls {
		l.Close()
	}
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// problems says what the forwarding could not do.
func (f *allowForward) problems() []report.Problem {
	if f == nil {
		return nil
	}
	var out []report.Problem
	if n := f.overBound.Load(); n > 0 {
		out = append(out, report.Problem{Kind: "allow-host-bound", Message: fmt.Sprintf(
			"%d connection(s) to allowed hosts were closed at once: more than %d were open (the forwarding bound)", n, cap(f.slots))})
	}
	if n := f.failed.Load(); n > 0 {
		last, _ := f.lastErr.Load().(string)
		out = append(out, report.Problem{Kind: "allow-host", Message: fmt.Sprintf(
			"%d connection(s) to allowed hosts could not be made by the runner (the last: %s)", n, last)})
	}
	return out
}

// planAllow checks the allowed hosts against the network mode and plans
// their addresses.
func (s *Session) planAllow() error {
	o := s.opts
	if len(o.AllowHosts) == 0 {
		return nil
	}
	if !o.Network.Confined() {
		return &InfraError{Cause: fmt.Sprintf("--allow-host with --network %s: the server can reach every host already", o.Network),
			Fix: "use --network none or sinkhole with --allow-host"}
	}
	for _, h := range o.AllowHosts {
		if o.Network == NetworkSinkhole && (h.Host == "localhost" || net.ParseIP(h.Host) != nil) {
			// The sinkhole sends every other host's connections to the
			// container's 127.0.0.1, same port: a listener there would
			// take them to the allowed host.
			return &InfraError{Cause: fmt.Sprintf("--allow-host %s with --network sinkhole: the sinkhole redirects every other host's connections to the container's loopback, where this one would be forwarded", h),
				Fix: "allow the host by a name, or use --network none"}
		}
	}
	p, err := planAllowHosts(o.AllowHosts)
	if err != nil {
		return &InfraError{Cause: err.Error(), Err: err}
	}
	s.allowPlan = p
	seen := map[string]bool{}
	for _, h := range o.AllowHosts {
		if !seen[h.String()] {
			seen[h.String()] = true
			s.rep.Sandbox.AllowedHosts = append(s.rep.Sandbox.AllowedHosts, h.String())
		}
	}
	slices.Sort(s.rep.Sandbox.AllowedHosts)
	return nil
}

// startAllow starts the forwarding in container id (its init is pid on
// the host), before the server starts.
func (s *Session) startAllow(id string, pid int) error {
	if len(s.allowPlan.routes) == 0 {
		return nil
	}
	s.stopAllow() // a first start's, were the mounts refused
	d, err := openNetns(id, pid)
	if err != nil {
		return err
	}
	dial := s.opts.AllowDial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	n := s.opts.MaxAllowConns
	if n <= 0 {
		n = DefaultMaxAllowConns
	}
	f, err := startAllowForward(d, s.allowPlan, dial, n)
	if err != nil {
		d.close()
		return err
	}
	s.allowNS, s.allow = d, f
	return nil
}

// stopAllow ends the forwarding and reports what it could not do.
func (s *Session) stopAllow() {
	if s.allow == nil {
		return
	}
	s.allow.close()
	s.rep.Problems = append(s.rep.Problems, s.allow.problems()...)
	s.allowNS.close()
	s.allow, s.allowNS = nil, nil
}
