// Package probes says what to call and with what: probe files, in the
// published check-hints format (an object of tool name to arguments, called
// in file order) or as a list of steps.
package probes
