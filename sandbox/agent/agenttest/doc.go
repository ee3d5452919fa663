// Package agenttest holds the moves a hostile server makes against the
// agent: signals to PID 1, sockets of refused families, data hidden where
// a tracer reading only the first buffer would miss it, a disguised or
// anonymous program, a non-dumpable process. The agent's own tests run
// them on the host, the fixture server's tools in a sandbox.
//
// Nothing here connects a socket of a refused family, and nothing sends
// to an address outside the loopback while a network interface other
// than the loopback is up (Offline): the datagrams to TEST-NET addresses
// fail with ENETUNREACH after the agent has seen them.
package agenttest
