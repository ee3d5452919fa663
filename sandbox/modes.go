package sandbox

import "github.com/mcpsandbox/mcpsandbox/sandbox/internal/enum"

// NetworkMode is what the server's network is.
type NetworkMode int

const (
	// NetworkNone: loopback only; DNS answered NXDOMAIN by the agent.
	NetworkNone NetworkMode = iota + 1
	// NetworkSinkhole: no network, but DNS answers a documentation address
	// (agent.SinkIP) and outbound TCP is redirected to the agent's
	// listeners; nothing leaves.
	NetworkSinkhole
	// NetworkBridge and NetworkHost really reach other machines.
	NetworkBridge
	NetworkHost
)

// DefaultNetwork is the command line's: the mode that lets a server do
// the most (resolve names, connect, fetch a page) while nothing leaves.
const DefaultNetwork = NetworkSinkhole

var networkNames = []string{NetworkNone: "none", NetworkSinkhole: "sinkhole", NetworkBridge: "bridge", NetworkHost: "host"}

func (m NetworkMode) String() string { return enum.Name(networkNames, int(m)) }

// Confined reports whether nothing the server sends can leave the machine.
func (m NetworkMode) Confined() bool { return m == NetworkNone || m == NetworkSinkhole }

// ParseNetworkMode reads none, sinkhole, bridge or host.
func ParseNetworkMode(s string) (NetworkMode, error) {
	v, err := enum.Parse(networkNames, "network mode", s)
	return NetworkMode(v), err
}

// Set and Type make NetworkMode a command-line flag value.
func (m *NetworkMode) Set(s string) (err error) { *m, err = ParseNetworkMode(s); return err }
func (m NetworkMode) Type() string              { return "mode" }

// Isolation is how calls share containers.
type Isolation int

const (
	// IsolationSession runs every call in one container, in order.
	IsolationSession Isolation = iota + 1
	// IsolationCall gives each call (with its repeats) a fresh container
	// from the same starting state.
	IsolationCall
)

var isolationNames = []string{IsolationSession: "session", IsolationCall: "call"}

func (i Isolation) String() string { return enum.Name(isolationNames, int(i)) }

// ParseIsolation reads session or call.
func ParseIsolation(s string) (Isolation, error) {
	v, err := enum.Parse(isolationNames, "isolation", s)
	return Isolation(v), err
}

func (i *Isolation) Set(s string) (err error) { *i, err = ParseIsolation(s); return err }
func (i Isolation) Type() string              { return "mode" }

// ChangesMode is where file effects are read from.
type ChangesMode int

const (
	// ChangesAuto reads the upper dir when it is readable, else the API.
	ChangesAuto ChangesMode = iota + 1
	// ChangesUpperDir reads the container's overlayfs upper dir on the host.
	ChangesUpperDir
	// ChangesAPI reads the Engine API's changes, stat and archive calls.
	ChangesAPI
)

var changesNames = []string{ChangesAuto: "auto", ChangesUpperDir: "upperdir", ChangesAPI: "api"}

func (c ChangesMode) String() string { return enum.Name(changesNames, int(c)) }

// ParseChangesMode reads auto, upperdir or api.
func ParseChangesMode(s string) (ChangesMode, error) {
	v, err := enum.Parse(changesNames, "changes mode", s)
	return ChangesMode(v), err
}

func (c *ChangesMode) Set(s string) (err error) { *c, err = ParseChangesMode(s); return err }
func (c ChangesMode) Type() string              { return "mode" }

// ErrUnknownMode is wrapped by every mode parser's error.
var ErrUnknownMode = enum.ErrUnknown
