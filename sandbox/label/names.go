package label

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

const (
	// Managed is set to "true" on every container, network, volume and image
	// mcpsandbox creates.
	Managed = "dev.mcpsandbox.managed"
	// Run carries the id of the run that created the object.
	Run = "dev.mcpsandbox.run"
	// Owner names the process that owns a container, as
	// "host:pid:start:pidns" (see OwnerOf), so that a later run can tell a
	// live owner from a dead one.
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
