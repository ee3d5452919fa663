package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// TSSDKDir holds the package.json and package-lock.json that pin the
// official TypeScript MCP SDK (@modelcontextprotocol/sdk) and every
// package it brings, relative to the module root.
const TSSDKDir = "sandbox/wire/readers/testdata/tsclient"

// TSSDKMount is where TSSDK mounts the SDK's node_modules. A script
// mounted beside it, in /opt/tsclient, imports the SDK by its bare name
// ('@modelcontextprotocol/sdk/client/index.js'): node resolves bare
// names from the script's directory up.
const TSSDKMount = "/opt/tsclient/node_modules"

// TSSDK installs the TypeScript SDK on the host from TSSDKDir's lockfile
// with npm ci --ignore-scripts (once per machine: cached in the user
// cache dir by the lockfile's sha256) and returns a read-only mount of
// its node_modules at TSSDKMount. To move the pin, edit package.json and
// run `npm install --package-lock-only --ignore-scripts` in TSSDKDir.
func TSSDK(t testing.TB) sandbox.Mount {
	t.Helper()
	src := filepath.Join(ModuleRoot(t), TSSDKDir)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatalf("the TypeScript SDK's lockfile: %v", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(cache, "mcpsandbox-test", "tssdk-"+hex.EncodeToString(sum[:6]))
	mods := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return sandbox.Mount{Source: mods, Target: TSSDKMount}
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no npm on the host to install the TypeScript SDK: %v", err)
		}
		t.Skipf("no npm on the host to install the TypeScript SDK (run ci/host-deps.sh): %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tssdk-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of %s: %v\n%s", TSSDKDir, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another test process may have won the race; either copy will do.
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
			t.Fatalf("installing the TypeScript SDK: %v", err)
		}
	}
	return sandbox.Mount{Source: mods, Target: TSSDKMount}
}
