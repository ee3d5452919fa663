package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// sessionFlag is a group of the session's flags (sandbox.SessionOptions),
// for a command to pick those that apply to it.
type sessionFlag uint

const (
	flagImage     sessionFlag = 1 << iota // --image
	flagWorkspace                         // --workspace, --copy-workspace
	flagCode                              // --mount, --package
	flagUser                              // --user
	flagLimits                            // --pids, --memory, --cpus, --disk, --disk-interval, --hash-budget, --max-files, --changes
	flagStart                             // --start-timeout
	flagCall                              // --call-timeout
	flagAgent                             // --agent, found (sandbox.FindAgent) once parsed
	flagNoAgent                           // --no-agent
	flagNetwork                           // --network
	flagTransport                         // --transport, --port, --path, --header
	flagBounds                            // --max-message, --max-depth, --max-tool-pages, --max-tool-list, --max-tools, --max-schema, --max-result
	flagAllowHost                         // --allow-host
	flagState                             // --state
)

// defaultImage is --image's default: the node image, built from the
// host's files when missing. A Python launcher line runs in the python
// image instead, unless --image names another.
const defaultImage = "mcpsandbox/node:latest"

// serverFlags are the session flags of the commands that run a server
// for a client of their own: scan (with flagCall) and run.
const serverFlags = flagImage | flagWorkspace | flagCode | flagUser | flagLimits | flagStart | flagAgent | flagNoAgent |
	flagNetwork | flagTransport | flagBounds | flagAllowHost | flagState

// sessionFlags defines the session's flags of the groups in which on fs,
// each with one name, one default and one help text whatever the command
// (TestSessionFlagsHelp), and returns what checks them once parsed and
// fills them into so; it leaves the fields of the groups not asked for as
// they are. Running the server as root is warned of on stderr.
func sessionFlags(fs *pflag.FlagSet, which sessionFlag, stderr io.Writer) func(so *sandbox.SessionOptions) error {
	var fills []func(so *sandbox.SessionOptions) error
	add := func(f func(so *sandbox.SessionOptions) error) { fills = append(fills, f) }
	if which&flagImage != 0 {
		image := fs.String("image", defaultImage, "image to run the server in, or for client the client (must be in the local engine; never pulled)")
		add(func(so *sandbox.SessionOptions) error { so.Image = *image; return nil })
	}
	if which&flagWorkspace != 0 {
		ws := fs.String("workspace", "", "host directory the server sees at /workspace, copy-on-write: its changes are effects, the directory is never modified (default: a fresh empty one)")
		copyWS := fs.Bool("copy-workspace", false, "copy the workspace and the package into image layers instead of mounting them copy-on-write")
		add(func(so *sandbox.SessionOptions) error {
			if *ws != "" {
				if fi, err := os.Stat(*ws); err != nil || !fi.IsDir() {
					return usageError{fmt.Sprintf("--workspace %q is not a directory", *ws)}
				}
			}
			so.Workspace, so.CopyWorkspace = *ws, *copyWS
			return nil
		})
	}
	if which&flagCode != 0 {
		mounts := fs.StringArray("mount", nil, "HOST:CONTAINER path to mount read-only, for the server's code, or for client the client's (repeatable)")
		pkg := fs.String("package", "", "DIR[:/TARGET]: the server's code, or for client the client's, seen at TARGET (default "+sandbox.DefaultPackageTarget+") as the workspace is: writable copy-on-write, never modified, its changes effects")
		add(func(so *sandbox.SessionOptions) error {
			var err error
			if so.Mounts, err = parseMounts(*mounts); err != nil {
				return err
			}
			if *pkg != "" {
				if so.Package, so.PackageTarget, err = parsePackage(*pkg); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if which&flagUser != 0 {
		user := fs.String("user", images.User(), "UID[:GID] the server runs as, whatever the image's USER; 0 runs it as root, with a warning and a server-runs-as-root finding")
		add(func(so *sandbox.SessionOptions) error {
			if !validUser(*user) {
				return usageError{fmt.Sprintf("--user %q: want UID[:GID], numbers", *user)}
			}
			if rules.RunsAsRoot(*user) {
				fmt.Fprintf(stderr, "mcpsandbox: warning: --user %s runs the server as root in the sandbox: a %s finding\n", *user, rules.ServerRunsAsRoot)
			}
			so.User = *user
			return nil
		})
	}
	if which&flagLimits != 0 {
		limits := sandbox.DefaultLimits()
		fs.Int64Var(&limits.Pids, "pids", limits.Pids, "process limit")
		fs.Int64Var(&limits.MemoryMB, "memory", limits.MemoryMB, "memory limit in MiB")
		fs.Float64Var(&limits.CPUs, "cpus", limits.CPUs, "CPU limit")
		hashBudget := fs.Int64("hash-budget", overlay.DefaultHashBudget>>20, "MiB each snapshot may read to compare files by content; files past it are left unhashed, a hash-budget-exceeded finding")
		disk := byteSize{n: sandbox.DefaultDisk, bareWasMiB: true}
		fs.Var(&disk, "disk", "bound on the space the server's writes may hold (upper layer, workspace and package changes, /dev/shm): past it the server is stopped, a disk-bound-exceeded finding: "+sizeHelp)
		diskInterval := fs.Duration("disk-interval", sandbox.DefaultDiskInterval, "how often the disk use is measured (what a writer gets past --disk grows with it)")
		maxFiles := fs.Int("max-files", 0, "entries walked per file snapshot (default 200,000; 20,000 with --changes api); past it the snapshot is truncated, a problem and a finding")
		changes := sandbox.ChangesAuto
		fs.Var(&changes, "changes", "how file effects are read: auto, upperdir (the overlay upper dir, needs a local engine and root) or api (the Engine API)")
		add(func(so *sandbox.SessionOptions) error {
			if *hashBudget <= 0 || *hashBudget > 1<<40 {
				return usageError{fmt.Sprintf("--hash-budget %d: want MiB, more than 0", *hashBudget)}
			}
			if *diskInterval <= 0 {
				return usageError{fmt.Sprintf("--disk-interval %s: want more than 0", *diskInterval)}
			}
			so.Limits, so.Disk, so.DiskInterval, so.Changes = limits, disk.n, *diskInterval, changes
			so.FileLimits.HashBudget, so.FileLimits.MaxEntries = *hashBudget<<20, *maxFiles
			return nil
		})
	}
	if which&flagStart != 0 {
		start := fs.Duration("start-timeout", 0, "bound on the server's start and the scan's initialize (default 60s)")
		add(func(so *sandbox.SessionOptions) error { so.StartTimeout = *start; return nil })
	}
	if which&flagCall != 0 {
		call := fs.Duration("call-timeout", 0, "bound on each call (default 30s)")
		add(func(so *sandbox.SessionOptions) error { so.CallTimeout = *call; return nil })
	}
	// The network first: --no-agent changes its default, the transport
	// checks itself against it.
	var noAgent *bool
	if which&flagNoAgent != 0 {
		noAgent = fs.Bool("no-agent", false, "run without the agent: processes and network attempts are not recorded, and --network is none unless given")
	}
	if which&flagNetwork != 0 {
		network := sandbox.DefaultNetwork
		fs.Var(&network, "network", "sinkhole (default: every name resolves to a documentation address, common TCP ports answered by the agent; nothing leaves), none (loopback only), bridge or host (the server can reach other machines)")
		add(func(so *sandbox.SessionOptions) error {
			so.Network = network
			if noAgent != nil && *noAgent && !fs.Changed("network") {
				// The sinkhole is the agent's: without it, the default is
				// what needs nothing of it.
				so.Network = sandbox.NetworkNone
			}
			return nil
		})
	}
	if which&flagTransport != 0 {
		transport := transportFlags(fs)
		add(func(so *sandbox.SessionOptions) (err error) { so.Transport, err = transport(so.Network); return err })
	}
	if which&flagBounds != 0 {
		bounds := boundFlags(fs)
		add(func(so *sandbox.SessionOptions) (err error) { so.Bounds, err = bounds(); return err })
	}
	if which&flagAllowHost != 0 {
		allowHosts := allowHostFlag(fs)
		add(func(so *sandbox.SessionOptions) (err error) { so.AllowHosts, err = allowHosts(); return err })
	}
	// Last: the agent is looked for, and the state opened, only once every
	// other flag is right.
	if which&flagAgent != 0 {
		agentPath := agentFlag(fs)
		add(func(so *sandbox.SessionOptions) error {
			if noAgent != nil && *noAgent {
				return nil
			}
			a, err := sandbox.FindAgent(*agentPath)
			so.Agent = a
			return err
		})
	}
	if which&flagState != 0 {
		state := stateFlag(fs)
		add(func(so *sandbox.SessionOptions) error {
			sd, err := state()
			if sd != nil { // a nil *StateDir is no state, not a state that is nil
				so.State = sd
			}
			return err
		})
	}
	return func(so *sandbox.SessionOptions) error {
		for _, f := range fills {
			if err := f(so); err != nil {
				return err
			}
		}
		return nil
	}
}

// agentFlag defines --agent, the session's (flagAgent) or, as client
// defines it, one the command looks for itself.
func agentFlag(fs *pflag.FlagSet) *string {
	return fs.String("agent", "", "a static build of mcpsandbox to run as the in-container agent, and for client as the twin (default: this binary)")
}

// parseMounts reads --mount's HOST:/CONTAINER mounts, the host side made
// absolute.
func parseMounts(mounts []string) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	for _, m := range mounts {
		src, dst, ok := strings.Cut(m, ":")
		if !ok || src == "" || !strings.HasPrefix(dst, "/") {
			return nil, usageError{fmt.Sprintf("--mount %q: want HOST:/CONTAINER/PATH", m)}
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--mount %q: %v", m, err)}
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, usageError{fmt.Sprintf("--mount %q: %v", m, err)}
		}
		out = append(out, sandbox.Mount{Source: abs, Target: dst})
	}
	return out, nil
}

// parsePackage reads --package's DIR[:/TARGET].
func parsePackage(pkg string) (dir, target string, err error) {
	dir = pkg
	if i := strings.LastIndex(dir, ":"); i >= 0 && strings.HasPrefix(dir[i+1:], "/") {
		dir, target = dir[:i], dir[i+1:]
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", usageError{fmt.Sprintf("--package %q: %q is not a directory", pkg, dir)}
	}
	return dir, target, nil
}

// validUser says whether s is what --user takes, UID[:GID] in numbers:
// with names, whether it is root would depend on the image's /etc/passwd.
func validUser(s string) bool {
	num := func(x string) bool { _, err := strconv.ParseUint(x, 10, 32); return err == nil }
	uid, gid, hasGID := strings.Cut(s, ":")
	return num(uid) && (!hasGID || num(gid))
}
