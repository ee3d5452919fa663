package report_test

import (
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestNormalizeEvidence(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"created /workspace/src/index.ts", "created /workspace/src/index.ts"},
		{"created /workspace/p/.git/objects/9d", "created /workspace/p/.git/objects/<hex>"},
		{"created /workspace/p/.git/objects/a3/4f1c2e9b8d7a6f5e4d3c2b1a0f9e8d7c6b5a4f", "created /workspace/p/.git/objects/<hex>/<hex>"},
		{"created /home/sandbox/.npm/_cacache/content-v2/sha512/9d/3a/ff", "created /home/sandbox/.npm/_cacache/content-v<n>/sha<n>/<hex>/<hex>/<hex>"},
		{"created /workspace/ab/cd", "created /workspace/ab/cd"}, // not under a fan-out parent
		{"created /workspace/objects/dead", "created /workspace/objects/dead"},
		{"created /workspace/out.json.tmp-1234", "created /workspace/out.json.tmp-<n>"},
		{"created /tmp/tmp-123-AbC9xz", "created /tmp/tmp-<n>-<id>"},
		{"created /tmp/tmp-4821-Qw3rTyUiOp12", "created /tmp/tmp-<n>-<id>"},
		{"created /tmp/tmp.AbC9xz1234/x", "created /tmp/tmp.<id>/x"},
		{"created /tmp/tmpk3j_x9a2.txt", "created /tmp/tmp<id>.txt"},
		{"created /tmp/fixture-AbC9xz", "created /tmp/fixture-<id>"},
		{"created /tmp/fixture-ReadMe", "created /tmp/fixture-<id>"},
		{"created /tmp/fixture-backup", "created /tmp/fixture-backup"}, // a word, not random
		{"created /tmp/Readme.md", "created /tmp/Readme.md"},
		{"deleted /proc/31337/status", "deleted /proc/<n>/status"},
		{"created /home/sandbox/.cache/3f2a9b1c0d4e5f60/blob", "created /home/sandbox/.cache/<hex>/blob"},
		{"created /tmp/0b3e5c1a-7f2d-4e8a-9c6b-1d2e3f4a5b6c.lock", "created /tmp/<uuid>.lock"},
		{"created /tmp/python3.11", "created /tmp/python<n>.<n>"},
		{"created /workspace/data.json.3f2a9b1c", "created /workspace/data.json.<hex>"},
		{"created /workspace/data.json.31415926", "created /workspace/data.json.<hex>"},
		{"background: sleep 100", "background: sleep <n>"},
		{"ran /bin/kill -9 4242", "ran /bin/kill -<n> <n>"},
		{"12 events dropped", "<n> events dropped"},
		// Hosts are kept; what follows them after a "/" is not a host.
		{"connect 203.0.113.7:443/tcp ENETUNREACH", "connect 203.0.113.7:443/tcp ENETUNREACH"},
		{"connect 2001:db8::1:443/tcp sinkholed:127.0.0.1:443", "connect 2001:db8::1:443/tcp sinkholed:<n>.<n>.<n>.<n>:<n>"},
		{"dns a1b2c3d4e5.telemetry.example.com", "dns a1b2c3d4e5.telemetry.example.com"},
		{"tls api2.example.com", "tls api2.example.com"},
		{"http POST collector.example.net/ingest/98765", "http POST collector.example.net/ingest/<n>"},
		{"aws-secret-access-key in dns query k3y.example.net", "aws-secret-access-key in dns query k3y.example.net"},
		{"github-token in http GET h1.example.org/", "github-token in http GET h1.example.org/"},
	} {
		if got := report.NormalizeEvidence(c.in); got != c.want {
			t.Errorf("NormalizeEvidence(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestFingerprintKeepsIdentityAcrossRuns(t *testing.T) {
	fp := func(rule, tool string, ev ...string) string {
		return report.Fingerprint(report.Finding{Rule: rule, Tool: tool, Evidence: ev})
	}
	base := fp("readonly-writes", "save", "created /workspace/out.json.tmp-1234", "created /proc/77/x")
	for name, other := range map[string]string{
		"another temp suffix and pid": fp("readonly-writes", "save", "created /workspace/out.json.tmp-98765", "created /proc/4012/x"),
		"evidence reordered":          fp("readonly-writes", "save", "created /proc/77/x", "created /workspace/out.json.tmp-1234"),
		"one more of the same kind":   fp("readonly-writes", "save", "created /workspace/out.json.tmp-1", "created /workspace/out.json.tmp-2", "created /proc/77/x"),
		"same, other call and message": report.Fingerprint(report.Finding{Rule: "readonly-writes", Tool: "save", Call: 9, Message: "m", Severity: report.SeverityNote,
			Evidence: []string{"created /workspace/out.json.tmp-5", "created /proc/1/x"}}),
	} {
		if other != base {
			t.Errorf("%s: fingerprint %s, want %s", name, other, base)
		}
	}
	if a, b := fp("events-dropped", "", "12 events dropped"), fp("events-dropped", "", "40000 events dropped"); a != b {
		t.Errorf("a count changed the fingerprint: %s %s", a, b)
	}
	if a, b := fp("readonly-writes", "save", "created /tmp/tmp-123-AbC9xz"), fp("readonly-writes", "save", "created /tmp/tmp-9-Zy8XwV"); a != b {
		t.Errorf("a mkstemp name changed the fingerprint: %s %s", a, b)
	}

	seen := map[string]string{}
	for name, f := range map[string]string{
		"base":        base,
		"other path":  fp("readonly-writes", "save", "created /workspace/other.json.tmp-1234", "created /proc/77/x"),
		"other rule":  fp("writes-outside-workspace", "save", "created /workspace/out.json.tmp-1234", "created /proc/77/x"),
		"other tool":  fp("readonly-writes", "load", "created /workspace/out.json.tmp-1234", "created /proc/77/x"),
		"other kind":  fp("readonly-writes", "save", "deleted /workspace/out.json.tmp-1234", "created /proc/77/x"),
		"host a":      fp("closed-world-network", "fetch", "dns a.example.com"),
		"host b":      fp("closed-world-network", "fetch", "dns b.example.com"),
		"address a":   fp("closed-world-network", "fetch", "connect 203.0.113.7:443/tcp ENETUNREACH"),
		"address b":   fp("closed-world-network", "fetch", "connect 203.0.113.8:443/tcp ENETUNREACH"),
		"port b":      fp("closed-world-network", "fetch", "connect 203.0.113.7:80/tcp ENETUNREACH"),
		"server":      fp("events-dropped", "", "12 events dropped"),
		"tool server": fp("events-dropped", "(server)x", "12 events dropped"),
	} {
		if len(f) != 16 {
			t.Errorf("%s: fingerprint %q is not 16 hex digits", name, f)
		}
		if prev, ok := seen[f]; ok {
			t.Errorf("%s and %s share fingerprint %s", name, prev, f)
		}
		seen[f] = name
	}
}
