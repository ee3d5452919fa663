package sandbox

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AgentName is the agent binary's file name, looked for next to mcpsandbox.
const AgentName = "mcpsandbox-agent"

// FindAgent returns the agent binary to mount: path if given, else the
// one next to the running executable. It must be a static executable (the
// images need not have a C library).
func FindAgent(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", &InfraError{Cause: fmt.Sprintf("finding mcpsandbox's own path: %v", err), Fix: "pass --agent"}
		}
		path = filepath.Join(filepath.Dir(exe), AgentName)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	f, err := elf.Open(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", &InfraError{Cause: fmt.Sprintf("the agent %s is missing", abs),
				Fix: "build it with `make build` (CGO_ENABLED=0 go build ./cmd/mcpsandbox-agent), pass --agent, or run with --no-agent"}
		}
		return "", &InfraError{Cause: fmt.Sprintf("the agent %s is not an executable: %v", abs, err), Fix: "rebuild it with `make build`"}
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", &InfraError{Cause: fmt.Sprintf("the agent %s is dynamically linked", abs), Fix: "build it with CGO_ENABLED=0"}
		}
	}
	return abs, nil
}
