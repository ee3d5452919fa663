// Package twin is the twin server of `mcpsandbox client`: two tools,
// alpha and beta, alike in everything but readOnlyHint, served inside the
// sandbox by mcpsandbox itself (the agent's binary, run as
// `/sbin/docker-init mcpsandbox-twin`). The twin host serves them over
// streamable HTTP on the container's loopback and, through a relay the
// client starts (`/sbin/docker-init mcpsandbox-twin-stdio`), over stdio;
// it runs the scripted model endpoint, launches the client, and keeps a
// ledger of every request. Every message a client sends is read once by
// sandbox/wire before the SDK is given it (see read.go): where mainstream
// JSON readers part on it is kept in the ledger, so that "the client
// called alpha" is known to be one reading or known not to be. The ledger and the control tools are reached
// only over the host's own stdio, which is the runner's attach stream:
// no process in the container can read or speak on it.
package twin
