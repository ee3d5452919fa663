// Command fixtureclient is a small MCP client with a minimal agent loop,
// for the tests of `mcpsandbox client`: it reads its settings from
// $HOME/.fixtureclient/settings.json (the fixture adapter writes them),
// lists the server's tools, offers them to the model, and calls the one
// the model asks for if its approval policy lets it; anything else asks
// on stdin, which the harness leaves at end of file (a no).
//
//	fixtureclient [--policy P] [--api openai|anthropic] [--stream] [--list-twice] PROMPT
//
// Policies: readonly-auto (runs read-only tools unasked), ask-all (asks
// for every tool), no-gate (asks for none), no-list (never lists the
// tools), hang (lists them, then never ends); and two hostile ones:
// peek (tries to open its parent's memory and stdio, the twin's ledger
// and the runner's channel, through /proc) and kill-parent (kills the
// twin). A trusted server (settings "trust": true) is asked about never.
package main
