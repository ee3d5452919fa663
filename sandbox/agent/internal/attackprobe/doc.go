//go:build linux && amd64

// Command attackprobe is a hostile server for the agent's attack tests
// (attack_test.go): each mode tries to make the agent report something
// other than what ran.
package main
