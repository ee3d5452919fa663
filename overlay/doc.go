// Package overlay turns a container's filesystem changes into per-phase
// effects: what was created, modified or deleted, in the workspace or
// outside it, between two snapshots of the changed paths.
//
// A Snapshot is cumulative: every path that differs from the image, as
// read from an overlayfs upper dir (UpperDir) or from any other source that
// can list changes (the Engine API, in package sandbox). Delta compares two
// snapshots, so a phase's effects cost in proportion to what changed, never
// to the size of the image or the workspace. The package knows nothing of
// Docker or MCP.
package overlay
