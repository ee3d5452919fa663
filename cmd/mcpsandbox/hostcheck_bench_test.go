package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// The real server BenchmarkHostChecker scans, pinned: the reference
// filesystem server, 14 tools of which 10 claim readOnlyHint, all local
// (it needs no key and reaches no network), so that running it on the
// host for the checker is safe.
const (
	hostBenchPackage = "@modelcontextprotocol/server-filesystem@2026.8.31"
	hostBenchEntry   = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)

// BenchmarkHostChecker is the headline comparison: a default
// scan of a real npm server with a probe file, side by side with the
// published kind of checker (testdata/hostcheck/check-hints.mjs, 40
// lines: it runs the server on the host, calls each read-only tool the
// probe file names and hashes the whole workspace after each call),
// interleaved in each iteration so that both ran under the same load.
// The workspace is this repository's tree at HEAD (git archive): a
// project of about 650 files. The package is installed on the host once
// (npm, scripts off) into a cache under the user's cache directory.
//
// Reported: each one's median seconds, scan/checker (the goal: at most
// 2), and the scan's --timings steps (median ms of the largest) so that
// the table in docs/measurements.md says where the time went.
func BenchmarkHostChecker(b *testing.B) {
	for _, tool := range []string{"node", "npm", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("the host checker needs %s on the host: %v", tool, err)
		}
	}
	cli := sandboxtest.Docker(b)
	sandboxtest.NodeImage(b, cli)
	agentBin := sandboxtest.Agent(b)
	prefix := hostBenchInstall(b)
	probesFile, err := filepath.Abs("testdata/hostcheck/probes.json")
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	archive := exec.Command("sh", "-c", `git -C ../.. archive HEAD | tar -x -C "$1"`, "sh", ws)
	if out, err := archive.CombinedOutput(); err != nil {
		b.Fatalf("copying the repository's tree: %v: %s", err, out)
	}
	entry := filepath.Join(prefix, hostBenchEntry)

	var checker, scan []float64
	steps := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := exec.Command("node", filepath.Join(prefix, "check-hints.mjs"), ws, probesFile, "--", "node", entry, ws)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("check-hints: %v: %s", err, out)
		}
		checker = append(checker, time.Since(start).Seconds())

		dir := b.TempDir()
		out, tf := filepath.Join(dir, "r.json"), filepath.Join(dir, "timings.json")
		args := []string{"scan", "--format", "json", "--out", out, "--agent", agentBin, "--timings", tf,
			"--workspace", ws, "--package", prefix, "--probes", probesFile,
			"--", "node", "/package/" + hostBenchEntry, "/workspace"}
		var stdout, stderr bytes.Buffer
		start = time.Now()
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		scan = append(scan, time.Since(start).Seconds())
		if code != 0 {
			b.Fatalf("scan: exit %d, want 0 (an honest server): %s", code, stderr.String())
		}
		var t timings.File
		raw, err := os.ReadFile(tf)
		if err == nil {
			err = json.Unmarshal(raw, &t)
		}
		if err != nil {
			b.Fatalf("reading the scan's timings: %v", err)
		}
		for _, s := range t.Path {
			steps[string(s.Step)] = append(steps[string(s.Step)], s.Ms)
		}
	}
	mc, ms := median(checker), median(scan)
	b.ReportMetric(mc, "checker-s")
	b.ReportMetric(ms, "scan-s")
	b.ReportMetric(ms/mc, "scan/checker")
	for _, step := range []timings.Step{timings.StepReplays, timings.StepLinger, timings.StepStart, timings.StepHandshake, timings.StepCall} {
		if v := steps[string(step)]; len(v) > 0 {
			b.ReportMetric(median(v), string(step)+"-ms")
		}
	}
}

// hostBenchInstall installs hostBenchPackage on the host with its install
// scripts off, once: a prefix under the user's cache directory, kept
// between runs, with the checker copied in beside node_modules (so that
// it resolves the MCP SDK the package brings).
func hostBenchInstall(b *testing.B) string {
	b.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	prefix := filepath.Join(cache, "mcpsandbox", "hostbench", filepath.Base(hostBenchPackage))
	if _, err := os.Stat(filepath.Join(prefix, hostBenchEntry)); err != nil {
		cmd := exec.Command("npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", prefix, hostBenchPackage)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("npm install %s: %v: %s", hostBenchPackage, err, out)
		}
	}
	src, err := os.ReadFile("testdata/hostcheck/check-hints.mjs")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "check-hints.mjs"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	return prefix
}
