package sandbox

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// installStatic is how to get an mcpsandbox that can be its own agent.
const installStatic = "CGO_ENABLED=0 go install github.com/mcpsandbox/mcpsandbox/cmd/mcpsandbox@latest"

// FindAgent returns the host path of the agent binary: path if given (a
// custom build, --agent), else mcpsandbox's own executable, which is the
// agent when run as /sbin/docker-init. It must be a static linux/amd64
// ELF executable: the images it goes into need not have a C library.
func FindAgent(path string) (string, error) {
	own := path == ""
	if own {
		exe, err := os.Executable()
		if err != nil {
			return "", &InfraError{Cause: fmt.Sprintf("finding mcpsandbox's own path: %v", err), Fix: "pass --agent PATH, or run with --no-agent", Err: err}
		}
		path = exe
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("the agent path %s: %w", path, err)
	}
	what, rebuild := "the agent "+abs, "build it with `CGO_ENABLED=0 go build ./cmd/mcpsandbox`"
	if own {
		what, rebuild = "mcpsandbox ("+abs+"), which is also the agent,", "reinstall it with `"+installStatic+"`"
	}
	f, err := elf.Open(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", &InfraError{Cause: what + " is missing", Fix: "pass --agent PATH to a static build of ./cmd/mcpsandbox, or run with --no-agent", Err: err}
		}
		return "", &InfraError{Cause: fmt.Sprintf("%s is not a Linux executable (%v)", what, err),
			Fix: "pass --agent PATH to a build made with `GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build ./cmd/mcpsandbox`, or run with --no-agent", Err: err}
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return "", &InfraError{Cause: fmt.Sprintf("%s is a %s %s, not a linux/amd64 executable", what, f.Machine, f.Type),
			Fix: "pass --agent PATH to a build made with `GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build ./cmd/mcpsandbox`, or run with --no-agent"}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", &InfraError{Cause: what + " is dynamically linked, so it cannot run in an image without its C library",
				Fix: rebuild + ", pass --agent PATH to a static build, or run with --no-agent"}
		}
	}
	return abs, nil
}
