// Command mcpsandbox runs MCP servers in disposable Docker containers,
// calls their tools and reports every side effect.
//
// The same binary is the in-container agent: a sandbox runs it as
// /sbin/docker-init (agent.Path), and a process started under that name
// is the agent, not the runner.
package main
