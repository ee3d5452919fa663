package report

// ProblemSandboxLost is the problem kind of a sandbox whose container was
// removed, killed, stopped, restarted or paused by someone other than the
// runner: what was seen until then is kept, but the report is incomplete
// and no result.
const ProblemSandboxLost = "sandbox-lost"
