//go:build linux && amd64

// Command ptracefloor is the benchmark's floor for a ptrace tracer: it
// runs a command under the agent's ptrace options and a seccomp filter
// that stops execve and execveat, and does nothing at each stop but
// resume the task. Same stops as the agent on an exec workload, none of
// its work: the difference from the agent is what the agent itself
// costs, the rest is ptrace's (see docs/measurements.md, "Benchmarks").
package main
