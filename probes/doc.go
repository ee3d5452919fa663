// Package probes says what to call and with what: probe files, in the
// published check-hints format (an object of tool name to arguments, called
// in file order) or as a list of steps (file.go); and, for the tools a
// server lists, the plan of calls (plan.go), with arguments synthesized
// from their input schemas (synth.go) into the run's canary project
// (canary.go), inputs that break a schema (negatives.go) and the boundary
// probes (boundary.go).
package probes
