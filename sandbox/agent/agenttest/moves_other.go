//go:build !(linux && amd64)

package agenttest

import "errors"

// errUnsupported: the moves are the Linux agent's adversary's.
var errUnsupported = errors.New("agenttest: linux/amd64 only")

// Socket is a socket() call to make.
type Socket struct {
	Name                   string
	Family, Type, Protocol uint64
	Refused                bool
}

// Sockets is empty here.
var Sockets []Socket

func Signals(pid int, skip func(sig int) bool) []string { return []string{errUnsupported.Error()} }
func MakeSockets() []string                             { return []string{errUnsupported.Error()} }
func SendMmsg(secret string, n, at int) error           { return errUnsupported }
func SendmsgIovecs(secret string) error                 { return errUnsupported }
func SecondDatagram(secret string) error                { return errUnsupported }
func BigSend(n int) error                               { return errUnsupported }
func DNSSecondQuestion(ip [4]byte, secret string) error { return errUnsupported }
func ExecMemfd(self, name string, args ...string) error { return errUnsupported }
func NonDumpable(prog string, args ...string) ([]string, error) {
	return nil, errUnsupported
}
