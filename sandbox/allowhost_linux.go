//go:build linux

package sandbox

import (
	"fmt"
	"net"
)

// listen opens a TCP listener on addr inside the container's network
// namespace; it stays there for its life.
func (d *netnsDialer) listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := d.in(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// startAllowForward listens on every route of plan in the container's
// namespace (d) and forwards what comes, dialled with dial, at most max
// connections at once.
func startAllowForward(d *netnsDialer, plan allowPlan, dial DialFunc, max int) (*allowForward, error) {
	f := &allowForward{plan: plan, dial: dial, slots: make(chan struct{}, max), conns: map[net.Conn]struct{}{}}
	for _, r := range plan.routes {
		l, err := d.listen(r.listen)
		if err != nil {
			f.close()
			return nil, &InfraError{Cause: fmt.Sprintf("listening for --allow-host %s on %s in the container: %v", r.host, r.listen, err), Err: err}
		}
		f.ls = append(f.ls, l)
		f.wg.Add(1)
		go f.serve(l, r)
	}
	return f, nil
}
