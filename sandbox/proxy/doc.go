// Package proxy is `mcpsandbox run`: one server in one sandbox for as
// long as a client uses it, the client's MCP session relayed to it over
// the proxy's own stdio. Each call's effects, and what the server does
// outside calls (its startup, before the client has an answer; between
// calls; its teardown), are collected and judged at the boundary as a
// scan judges them (the verdict's rules): a tool seen contradicting its
// hints has them corrected in the next tools/list, or its calls refused,
// by policy, and an effect that could be more than one tool's corrects
// each candidate, refusing none (judge.go). The hint book carries a
// tool's record across a rename and holds the server to what it did
// (trust.go). What the server asks the client is logged and under
// policy (asks.go); the client's stream is a bounded queue (queue.go).
// The log has one record per call, phase and finding.
//
// It is the one package under sandbox/ that judges (it imports ci/verdict
// and ci/rules): its job is to act on a verdict while the client waits.
package proxy
