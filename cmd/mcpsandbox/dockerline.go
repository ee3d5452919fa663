package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// dockerRefused are docker run's options that would weaken the sandbox,
// each with why: the line runs under the sandbox's own settings or not
// at all.
var dockerRefused = map[string]string{
	"-v": "binds a host path", "--volume": "binds a host path", "--mount": "mounts a host path",
	"--volumes-from": "takes another container's mounts", "--privileged": "lifts every confinement",
	"--cap-add": "adds capabilities", "--device": "gives a host device", "--device-cgroup-rule": "opens host devices",
	"--network": "sets the network (the sandbox's is --network)", "--net": "sets the network (the sandbox's is --network)",
	"--pid": "shares a process namespace", "--ipc": "shares an IPC namespace", "--uts": "shares the UTS namespace",
	"--userns": "sets the user namespace", "--cgroupns": "sets the cgroup namespace", "--security-opt": "changes the seccomp, AppArmor or SELinux confinement",
	"--group-add": "adds groups", "-p": "publishes a port on the host", "--publish": "publishes a port on the host",
	"-P": "publishes ports on the host", "--publish-all": "publishes ports on the host", "--add-host": "changes name resolution",
	"--dns": "changes name resolution", "--runtime": "changes the runtime", "--sysctl": "sets kernel parameters",
	"--tmpfs": "mounts a tmpfs", "-d": "detaches: not a stdio server", "--detach": "detaches: not a stdio server",
	"--pull": "pulls (mcpsandbox never pulls)", "--platform": "asks for another platform",
}

// dockerTaken are the options taken as they are, with a value or not:
// nothing of the sandbox's depends on them.
var dockerTaken = map[string]bool{"-i": false, "--interactive": false, "--rm": false, "--init": false, "-t": false, "--tty": false,
	"--name": true, "-l": true, "--label": true, "--hostname": true, "-h": true}

// dockerValued are the options that take the next argument.
var dockerValued = map[string]bool{"-e": true, "--env": true, "--env-file": true, "-u": true, "--user": true, "--entrypoint": true,
	"-w": true, "--workdir": true, "-v": true, "--volume": true, "--mount": true, "--volumes-from": true, "--cap-add": true,
	"--device": true, "--device-cgroup-rule": true, "--network": true, "--net": true, "--pid": true, "--ipc": true, "--uts": true,
	"--userns": true, "--cgroupns": true, "--security-opt": true, "--group-add": true, "-p": true, "--publish": true,
	"--add-host": true, "--dns": true, "--runtime": true, "--sysctl": true, "--tmpfs": true, "--pull": true, "--platform": true,
	"--name": true, "-l": true, "--label": true, "--hostname": true, "-h": true}

// dockerLine takes `docker run [OPTS] IMAGE [ARG...]` (podman's too) as
// the server: the image, which must be in the local engine (never
// pulled), run under the sandbox's settings with its entrypoint and the
// arguments as docker would; -e KEY=VAL is --env, --env-file a file in
// the workspace, --entrypoint, -u of another user than root and --rm, -i
// taken; an option that would weaken the sandbox is refused, one line
// each. ok is false for any other command.
func dockerLine(so *sandbox.SessionOptions) (ok bool, err error) {
	argv := so.Argv
	if len(argv) < 2 || (path.Base(argv[0]) != "docker" && path.Base(argv[0]) != "podman") || argv[1] != "run" {
		return false, nil
	}
	var refused []string
	var entrypoint []string
	argv = expandShort(argv)
	i := 2
	for ; i < len(argv) && strings.HasPrefix(argv[i], "-") && argv[i] != "-"; i++ {
		if argv[i] == "--" {
			i++
			break
		}
		flag, val, hasVal := strings.Cut(argv[i], "=")
		if dockerValued[flag] && !hasVal {
			if i+1 >= len(argv) {
				return true, usageError{fmt.Sprintf("docker run %s: no value", flag)}
			}
			i++
			val = argv[i]
		}
		if why, bad := dockerRefused[flag]; bad {
			refused = append(refused, fmt.Sprintf("docker run %s: refused: it %s", flag, why))
			continue
		}
		switch flag {
		case "-e", "--env":
			if k, _, _ := strings.Cut(val, "="); k == agent.ChildEnv {
				refused = append(refused, fmt.Sprintf("docker run %s %s: refused: the variable is the sandbox agent's own", flag, k))
				continue
			}
			if !strings.Contains(val, "=") {
				refused = append(refused, fmt.Sprintf("docker run -e %s: give the value (-e %s=VALUE): a scan does not pass the host's environment to the server", val, val))
				continue
			}
			so.Env = append(so.Env, val)
		case "--env-file":
			vals, err := envFile(val, so.Workspace)
			if err != nil {
				refused = append(refused, fmt.Sprintf("docker run --env-file %s: refused: %v", val, err))
				continue
			}
			so.Env = append(so.Env, vals...)
		case "-u", "--user":
			u, g, _ := strings.Cut(val, ":")
			switch {
			case !isDigits(u) || (g != "" && !isDigits(g)):
				refused = append(refused, fmt.Sprintf("docker run %s %s: give a numeric UID[:GID]", flag, val))
			case numericZero(u) || numericZero(g):
				// 00 and 0000 are root too.
				refused = append(refused, fmt.Sprintf("docker run %s %s: refused: root (uid or gid 0) in the sandbox is --user 0, said in so many words", flag, val))
			default:
				so.User = val
			}
		case "--entrypoint":
			entrypoint = []string{val}
		case "-w", "--workdir":
			refused = append(refused, fmt.Sprintf("docker run %s: not taken: the server runs in the image's working directory", flag))
		default:
			if _, known := dockerTaken[flag]; !known {
				refused = append(refused, fmt.Sprintf("docker run %s: not an option mcpsandbox takes", flag))
			}
		}
	}
	if i >= len(argv) {
		refused = append(refused, "docker run: no image")
	}
	if len(refused) > 0 {
		return true, usageError{strings.Join(refused, "\n")}
	}
	so.Image, so.Argv = argv[i], nil
	so.ImageEntrypoint = entrypoint
	if args := argv[i+1:]; len(args) > 0 {
		so.ImageArgs = args
	}
	return true, nil
}

// envFile reads KEY=VAL lines of a file that is in the workspace.
func envFile(p, workspace string) ([]string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	if workspace == "" {
		return nil, fmt.Errorf("not in the workspace (no --workspace)")
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	// Where the links lead, both: a link in the workspace to ~/.npmrc is
	// outside it.
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(ws, abs); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("outside the workspace %s", ws)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "=") {
			return nil, fmt.Errorf("%q: want KEY=VALUE", l)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// expandShort splits docker's combined one-letter options before the
// image (-it is -i -t); the last letter may take a value (-ie K=V).
func expandShort(argv []string) []string {
	out := append([]string{}, argv[:min(2, len(argv))]...)
	i := 2
	for ; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") || a == "-" {
			break
		}
		if len(a) > 2 && !strings.Contains(a, "=") && isLetters(a[1:]) {
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
			if dockerValued["-"+a[len(a)-1:]] && i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
			continue
		}
		out = append(out, a)
		if dockerValued[a] && i+1 < len(argv) {
			i++
			out = append(out, argv[i])
		}
	}
	return append(out, argv[min(i, len(argv)):]...)
}

func isLetters(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// numericZero says whether a number's digits are all 0 ("" is not).
func numericZero(s string) bool { return s != "" && strings.Trim(s, "0") == "" }
