// Package label names the Docker labels that mark everything mcpsandbox
// creates, so that cleanup and orphan reaping select by label and never touch
// anything else.
package label

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const (
	// Managed is set to "true" on every container, network, volume and image
	// mcpsandbox creates.
	Managed = "dev.mcpsandbox.managed"
	// Run carries the id of the run that created the object.
	Run = "dev.mcpsandbox.run"
	// Owner names the process that owns a container, as "host:pid:start", so
	// that a later run can tell a live owner from a dead one.
	Owner = "dev.mcpsandbox.owner"
	// Runtime names the runtime of an image (node, python, base).
	Runtime = "dev.mcpsandbox.runtime"
	// ContentHash is the hash of an image's inputs.
	ContentHash = "dev.mcpsandbox.content-hash"
	// Kind tells what an object is for (runtime, workspace, sandbox).
	Kind = "dev.mcpsandbox.kind"
	// Keep is set to "true" on what a user asked to keep (a container left
	// with --keep): neither the orphan reaper nor cache eviction removes
	// it; only clean does.
	Keep = "dev.mcpsandbox.keep"
)

// ManagedFilter is the label filter that selects every mcpsandbox object.
const ManagedFilter = Managed + "=true"

// NewRunID returns a fresh random run id.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// Set returns the labels every object of run id carries.
func Set(runID string, extra map[string]string) map[string]string {
	m := map[string]string{Managed: "true", Run: runID}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// SelfOwner returns the Owner label value for this process.
func SelfOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), procStart(os.Getpid()))
}

// OwnerAlive reports whether the process named by an Owner label value still
// runs. It answers true when it cannot tell (another host, unreadable /proc),
// so that reaping never removes a container whose owner may be alive.
func OwnerAlive(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return true
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return true
	}
	if procStart(os.Getpid()) == "" {
		return true // no /proc here: cannot tell
	}
	start := procStart(pid)
	if start == "" {
		return false // no such process
	}
	return start == parts[2]
}

// procStart returns the start time of pid in clock ticks since boot (field 22
// of /proc/pid/stat), which tells a reused pid from the original process.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
