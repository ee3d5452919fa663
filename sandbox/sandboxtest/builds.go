package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// ModuleRoot returns the directory of go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

var fixture struct {
	once sync.Once
	path string
	err  error
}

var agentBin struct {
	once sync.Once
	path string
	err  error
}

// Agent builds mcpsandbox, which is also the in-container agent, as a
// static binary (once per test binary) and returns its path.
func Agent(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	agentBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpsandbox-agent-")
		if err != nil {
			agentBin.err = err
			return
		}
		agentBin.path = filepath.Join(dir, "mcpsandbox")
		cmd := exec.Command("go", "build", "-o", agentBin.path, "./cmd/mcpsandbox")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBin.err = fmt.Errorf("building mcpsandbox (the agent): %v\n%s", err, out)
		}
	})
	if agentBin.err != nil {
		t.Fatal(agentBin.err)
	}
	return agentBin.path
}

var runnerBin struct {
	once sync.Once
	path string
	err  error
}

// Runner builds the mcpsandbox command (once per test binary), for tests
// that run it as a process of its own, and returns its path.
func Runner(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	runnerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpsandbox-runner-")
		if err != nil {
			runnerBin.err = err
			return
		}
		runnerBin.path = filepath.Join(dir, "mcpsandbox")
		cmd := exec.Command("go", "build", "-o", runnerBin.path, "./cmd/mcpsandbox")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			runnerBin.err = fmt.Errorf("building mcpsandbox: %v\n%s", err, out)
		}
	})
	if runnerBin.err != nil {
		t.Fatal(runnerBin.err)
	}
	return runnerBin.path
}

// FixtureMount is where tests mount the fixture server in the container.
const FixtureMount = "/opt/fixture/server"

// Fixture builds the fixture server as a static binary (once per test
// binary) and returns a read-only mount of it at FixtureMount.
func Fixture(t testing.TB) sandbox.Mount {
	t.Helper()
	root := ModuleRoot(t)
	fixture.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpsandbox-fixture-")
		if err != nil {
			fixture.err = err
			return
		}
		fixture.path = filepath.Join(dir, "fixtureserver")
		cmd := exec.Command("go", "build", "-o", fixture.path, "./sandbox/internal/fixtureserver")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixture.err = fmt.Errorf("building the fixture server: %v\n%s", err, out)
		}
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return sandbox.Mount{Source: fixture.path, Target: FixtureMount}
}

// NPMServers are the real third-party servers the tests run, pinned.
var NPMServers = []string{
	"@modelcontextprotocol/server-filesystem@2026.8.31",
	"@modelcontextprotocol/server-memory@2026.8.31",
	"@modelcontextprotocol/server-everything@2026.8.31",
}

// NPMMount is where tests mount the npm servers' node_modules.
const NPMMount = "/opt/mcp/node_modules"

// NPM installs NPMServers on the host with npm --ignore-scripts (once per
// machine: cached in the user cache dir by the list's hash) and returns a
// read-only mount of their node_modules at NPMMount.
func NPM(t testing.TB) sandbox.Mount {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(strings.Join(NPMServers, "\n")))
	dir := filepath.Join(cache, "mcpsandbox-test", "npm-"+hex.EncodeToString(sum[:6]))
	mods := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "npm-install-")
		if err != nil {
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if tmp, err = os.MkdirTemp(filepath.Dir(dir), "npm-install-"); err != nil {
				t.Fatal(err)
			}
		}
		defer os.RemoveAll(tmp)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := append([]string{"install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", tmp}, NPMServers...)
		if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// Another test process may have won the race; either copy will do.
		if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
			if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
				t.Fatalf("installing npm servers: %v", err)
			}
		}
	}
	return sandbox.Mount{Source: mods, Target: NPMMount}
}
