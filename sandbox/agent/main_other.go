//go:build !(linux && amd64)

package agent

import (
	"fmt"
	"os"
	"runtime"
)

// Main reports that the agent runs only on linux/amd64: its seccomp filter
// and register access are written for that ABI. The runner itself (the
// event reader) builds everywhere.
func Main(args []string) int {
	fmt.Fprintf(os.Stderr, "docker-init: %s/%s is not supported (linux/amd64 only)\n", runtime.GOOS, runtime.GOARCH)
	return 127
}
