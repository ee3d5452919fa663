package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// scriptRunners are the interpreters whose first argument is a script:
// `node ./server.js`, `python3 server.py`.
var scriptRunners = []string{"node", "nodejs", "python", "python3", "bun", "deno", "tsx", "ts-node"}

// projectMarkers make a directory a project's root.
var projectMarkers = []string{"package.json", "pyproject.toml"}

// hostScript lets `scan -- node ./server.js` run a script that is on the
// host: the nearest directory above it that holds a package.json or a
// pyproject.toml (above every node_modules on the way: the package's
// dependencies are there) is mounted at hostProjectTarget as --package
// mounts, the script's argument made its path there, and stderr says so. A script with no
// such directory, or whose nearest is the home directory or /, is
// refused with the flags that put code in the sandbox. A path the host
// does not have is the container's, left as it is.
func hostScript(so *sandbox.SessionOptions, stderr io.Writer) error {
	i := scriptArg(so.Argv)
	if i < 0 || systemPath(so.Argv[i]) {
		return nil
	}
	script, err := filepath.Abs(so.Argv[i])
	if err != nil {
		return nil
	}
	fi, err := os.Stat(script)
	if err != nil || fi.IsDir() {
		return nil // not the host's: the container's path
	}
	if real, err := filepath.EvalSymlinks(script); err == nil {
		script = real // the project is the file's, wherever a link put it
	}
	root, ok := projectRoot(script)
	if !ok || sharedDir(root) {
		return usageError{fmt.Sprintf("%s is a host path, which the sandbox does not see, and no project directory (with a %s) above it can be mounted for it: put its code in with --package DIR, or --mount DIR:/PATH and the path in the sandbox",
			so.Argv[i], strings.Join(projectMarkers, " or "))}
	}
	rel, err := filepath.Rel(root, script)
	if err != nil {
		return nil
	}
	if so.Package != "" {
		return usageError{fmt.Sprintf("%s is on the host, and --package already names the server's code: give the script's path in the sandbox", so.Argv[i])}
	}
	// As --package: copy-on-write, never modified, readable by the
	// sandbox's user whatever the host's modes (a bind of a 0700
	// directory is not).
	so.Package, so.PackageTarget = root, hostProjectTarget
	so.Argv[i] = path.Join(hostProjectTarget, filepath.ToSlash(rel))
	fmt.Fprintf(stderr, "mcpsandbox: %s is on the host: its project %s is mounted at %s as --package does (copy-on-write, the host's copy never written), the server runs %s\n",
		report.Printable(script), report.Printable(root), hostProjectTarget, report.Printable(so.Argv[i]))
	return nil
}

// hostProjectTarget is where a host script's project is mounted: a path
// of its own, readable by the sandbox's user wherever the host keeps it
// (/root/... is not).
const hostProjectTarget = "/project"

// sharedDir says whether dir holds more than one project's code: /, the
// home directory or one above it (/home: every user's), a temporary
// directory (every program's), any world-writable sticky directory.
func sharedDir(dir string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return true
	}
	if real == "/" {
		return true
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && (h == real || strings.HasPrefix(h, real+"/")) {
			return true
		}
	}
	for _, tmp := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		if t, err := filepath.EvalSymlinks(tmp); err == nil && t == real {
			return true
		}
	}
	fi, err := os.Stat(real)
	return err != nil || fi.Mode()&os.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0
}

// valueFlags are interpreters' options whose value is the next argument
// (node --require FILE, python -W ARG): not the script.
var valueFlags = []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions",
	"--env-file", "--title", "--input-type", "-W", "-X", "--config", "--tsconfig"}

// systemPrefixes hold what an image has too: a path there is the
// image's (/usr/bin/node, /opt/server), whatever the host has.
var systemPrefixes = []string{"/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/etc/", "/var/lib/", "/snap/", "/nix/"}

func systemPath(p string) bool {
	return slices.ContainsFunc(systemPrefixes, func(pre string) bool { return strings.HasPrefix(p, pre) })
}

// scriptArg is the index in argv of a script on the host: the command
// itself when it is a relative path (./server.js), else an
// interpreter's first argument that is not a flag (-1: none).
func scriptArg(argv []string) int {
	if len(argv) == 0 {
		return -1
	}
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) {
		return 0
	}
	if !slices.Contains(scriptRunners, argv[0]) {
		return -1
	}
	for i := 1; i < len(argv); i++ {
		if !strings.HasPrefix(argv[i], "-") {
			return i
		}
		switch {
		case argv[i] == "-e" || argv[i] == "-c" || argv[i] == "--eval" || argv[i] == "-p" || argv[i] == "--print" || argv[i] == "-m":
			return -1 // code or a module, not a script
		case slices.Contains(valueFlags, argv[i]):
			i++ // its value
		}
	}
	return -1
}

// projectRoot is the nearest directory above file holding a project
// marker, taken above the first node_modules on the way.
func projectRoot(file string) (string, bool) {
	dir := filepath.Dir(file)
	if i := strings.Index(dir+"/", "/node_modules/"); i >= 0 {
		dir = dir[:i]
		if dir == "" {
			dir = "/"
		}
	}
	for {
		for _, m := range projectMarkers {
			if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
				return dir, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
