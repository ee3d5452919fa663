package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// Python is the interpreter the python image holds (the host's
// /usr/bin/python3, which its manifest copies), as choosing a wheel for
// it needs it: its version X.Y.Z, machine (uname -m) and C library.
type Python struct {
	Version    string
	Machine    string
	GlibcMajor int
	GlibcMinor int
}

// pythonBinary is the python image's interpreter on the host.
const pythonBinary = "/usr/bin/python3"

var (
	pythonVersionRE = regexp.MustCompile(`^Python (3\.\d+\.\d+)`)
	glibcVersionRE  = regexp.MustCompile(`release version (\d+)\.(\d+)`)
)

// machines is uname -m by GOARCH, for the hosts images are built on.
var machines = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// PythonOf reads the python image's interpreter off the host: the
// version it prints (the host's own interpreter, not a package's code),
// the glibc its libc.so.6 says it is.
func PythonOf(ctx context.Context) (Python, error) {
	out, err := exec.CommandContext(ctx, pythonBinary, "--version").Output()
	if err != nil {
		return Python{}, fmt.Errorf("reading the python image's version (%s --version): %w", pythonBinary, err)
	}
	m := pythonVersionRE.FindSubmatch(bytes.TrimSpace(out))
	if m == nil {
		return Python{}, fmt.Errorf("%s --version printed %q", pythonBinary, strings.TrimSpace(string(out)))
	}
	p := Python{Version: string(m[1]), Machine: machines[runtime.GOARCH]}
	if p.Machine == "" {
		return Python{}, fmt.Errorf("no python image for %s", runtime.GOARCH)
	}
	libc, err := os.ReadFile("/lib/" + p.Machine + "-linux-gnu/libc.so.6")
	if err == nil {
		if g := glibcVersionRE.FindSubmatch(libc); g != nil {
			p.GlibcMajor, _ = strconv.Atoi(string(g[1]))
			p.GlibcMinor, _ = strconv.Atoi(string(g[2]))
		}
	}
	// Without it, only pure wheels are taken.
	return p, nil
}
