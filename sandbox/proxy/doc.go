// Package proxy is `mcpsandbox run`: one server in one sandbox for as
// long as a client uses it, the client's MCP session relayed to it over
// the proxy's own stdio. Each call's effects are collected as the client's
// calls end and judged at the boundary, as a scan judges them (the
// verdict's rules): a tool seen contradicting its hints has them
// corrected in the next tools/list, or its calls refused, by policy; the
// log has one record per call, phase and finding.
//
// It is the one package under sandbox/ that judges (it imports ci/verdict
// and ci/rules): its job is to act on a verdict while the client waits.
package proxy
