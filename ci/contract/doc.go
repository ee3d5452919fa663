// Package contract pins a server's published tool list — names,
// descriptions, input schemas and annotations exactly as sent — and
// reports drift against it as findings, so that a version bump that
// flips a safety hint fails the gate.
package contract
