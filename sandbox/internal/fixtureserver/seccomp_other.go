//go:build !(linux && amd64)

package main

import (
	"fmt"
	"os"
)

func underSeccomp(argv []string) int {
	fmt.Fprintln(os.Stderr, "under-seccomp: linux/amd64 only")
	return 2
}
