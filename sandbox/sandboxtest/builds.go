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
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
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

// built holds one build per package and flavour, for the test binary's
// life, in one directory of its own (dir, made on the first build).
var built struct {
	mu   sync.Mutex
	bins map[string]*build
	dir  string
}

// buildDirPrefix names the test binaries' build directories in the
// temporary directory; ownerFile in each says whose it is.
const (
	buildDirPrefix = "mcpsandbox-testbin-"
	ownerFile      = "owner"
)

// reapBuildDirs removes the build directories in tmp whose owner is
// gone. Best effort: another test binary may be reaping them too, and one
// with no owner file (being made) is left.
func reapBuildDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), buildDirPrefix) {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(tmp, e.Name(), ownerFile))
		if err == nil && !label.OwnerAlive(string(owner)) {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}

// buildDir is this test binary's build directory. A test binary has no
// hook at its exit (no package here has a TestMain of its own), so the
// directories of test binaries that ended are removed here instead, as
// the runner reaps the containers of dead runs: only those whose owner
// file names a process that is gone (label.OwnerAlive answers true when
// it cannot tell). Called with built.mu held.
func buildDir() (string, error) {
	if built.dir != "" {
		return built.dir, nil
	}
	tmp := os.TempDir()
	reapBuildDirs(tmp)
	dir, err := os.MkdirTemp(tmp, buildDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(label.SelfOwner()), 0o644); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	built.dir = dir
	return dir, nil
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds the module's package pkg (as "./cmd/mcpsandbox") into a
// binary named name, once per test binary, statically (CGO_ENABLED=0)
// when static is set, and returns its path.
func Build(t testing.TB, pkg, name string, static bool) string {
	t.Helper()
	root := ModuleRoot(t)
	key := fmt.Sprintf("%s %s %v", pkg, name, static)
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*build{}
	}
	b := built.bins[key]
	if b == nil {
		b = &build{}
		built.bins[key] = b
	}
	dir, derr := buildDir()
	built.mu.Unlock()
	b.once.Do(func() {
		if derr != nil {
			b.err = fmt.Errorf("the test binaries' build directory: %w", derr)
			return
		}
		// One directory per build: a static and a dynamic build of one
		// package share its name.
		sub, err := os.MkdirTemp(dir, name+"-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(sub, name)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = root
		if static {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Agent builds mcpsandbox, which is also the in-container agent, as a
// static binary (once per test binary) and returns its path.
func Agent(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/mcpsandbox", "mcpsandbox", true)
}

// Runner builds the mcpsandbox command (once per test binary), for tests
// that run it as a process of its own, and returns its path.
func Runner(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/mcpsandbox", "mcpsandbox", false)
}

// FixtureMount is where tests mount the fixture server in the container.
const FixtureMount = "/opt/fixture/server"

// Fixture builds the fixture server as a static binary (once per test
// binary) and returns a read-only mount of it at FixtureMount.
func Fixture(t testing.TB) sandbox.Mount {
	t.Helper()
	return sandbox.Mount{Source: Build(t, "./sandbox/internal/fixtureserver", "fixtureserver", true), Target: FixtureMount}
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
