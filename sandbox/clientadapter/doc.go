// Package clientadapter says how a client family is pointed at the twin
// server and the scripted model, and how it is told that a server is
// trusted (the positive control): settings files under HOME or the
// workspace, command-line arguments, environment variables. An adapter is
// a JSON file (see docs/client.md, "Adapters") or one of the built-ins.
// No adapter may turn on a mode that approves everything: Check refuses
// them, in the adapter and on the client's command line alike.
package clientadapter
