// Package depguard holds no code, only a test that keeps the package
// graph as designed: the parts that need no engine (overlay, probes)
// import neither Docker, the MCP SDK nor package sandbox, and the report
// model (ci/report) imports nothing of the module, so that each can be
// used, and tested, on its own.
package depguard
