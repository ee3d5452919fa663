// Package sandboxtest gives integration tests a real Docker engine, the runtime
// images, the fixture server and real MCP servers from npm. Without an
// engine the tests skip, except under CI=true, where they fail: a missing
// engine in CI is a broken CI, not a reason to pass.
package sandboxtest
