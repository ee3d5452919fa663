// Package agent is mcpsandbox's in-container agent and the runner's reader
// of what it reports. The agent runs as PID 1 of every sandbox: it starts
// the server as its child under ptrace with a seccomp filter that stops only
// the syscalls worth recording (execve, connect, sendto, sendmsg, bind,
// listen, ...), reaps zombies, answers DNS on the container's loopback, and
// streams events to the runner on the container's stderr, with the server's
// own stderr wrapped in frames the server cannot forge.
package agent
