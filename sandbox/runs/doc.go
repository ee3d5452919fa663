// Package runs keeps named runs and server states under the user's state
// directory: the store (Store: a run's record, its workspace's baseline,
// refreshed from its container), one named run from its begin to its kept
// container (Named, for scan --name and run --name alike), and a server's
// own files carried from one session to the next (StateDir, the session's
// ServerState).
package runs
