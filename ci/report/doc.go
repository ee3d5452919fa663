// Package report defines the scan report, mcpsandbox's public contract: one
// Go type, serialised as JSON with stable lower-camel-case field names, and
// versioned by SchemaVersion. Every array is emitted (never null) so that
// consumers need no special cases; additions bump the minor version, any
// rename or removal the major one.
package report
