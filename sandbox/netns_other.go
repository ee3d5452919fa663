//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"net"
)

// netnsDialer is Linux's: elsewhere the server's port cannot be reached.
type netnsDialer struct{}

func openNetns(string, int) (*netnsDialer, error) {
	return nil, &InfraError{Cause: "reaching a server over HTTP needs Linux (the runner dials from the container's network namespace)", Fix: "scan the server over stdio"}
}

func (d *netnsDialer) dial(context.Context, int) (net.Conn, error) {
	return nil, errors.ErrUnsupported
}

func (d *netnsDialer) close() {}
