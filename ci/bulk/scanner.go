package bulk

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// Job is one package's scan.
type Job struct {
	Spec      Spec
	Installed Installed
	// Env is KEY=VAL for the server, the secrets' honeytokens in it.
	Env []string
	// Seed draws the scan's bait; the honeytokens in Env are its.
	Seed uint64
	// Timeout bounds the scan (its --timeout).
	Timeout time.Duration
	// Idle, if set, is the scan's scan.Options.Idle: told when the scan
	// only waits on its server (a linger).
	Idle func() (resume func())
}

// Scanner scans one package. GateScanner is the real one; tests of the
// batch logic use fakes.
type Scanner interface {
	Scan(ctx context.Context, j Job) (*report.Report, error)
}

// GateScanner scans as `mcpsandbox scan` does: gate.Run with the
// command's options, the package mounted with --package DIR:/package.
type GateScanner struct {
	Engine sandbox.Engine
	// Base is every scan's options (image, agent, network, bounds); a
	// job sets Argv, Env, Package, Timeout and the bait seed.
	Base    scan.Options
	Verdict verdict.Config
	// Rounds and NoReplay are scan's --rounds and --no-replay.
	Rounds   int
	NoReplay bool
	Version  string
	// TimingsDir, if set, receives each scan's --timings file, named by
	// its spec's slug.
	TimingsDir string
}

// Scan implements Scanner.
func (g GateScanner) Scan(ctx context.Context, j Job) (*report.Report, error) {
	opts := g.Base
	opts.Argv = j.Installed.Argv
	opts.Env = append(append([]string{}, opts.Env...), j.Env...)
	if j.Installed.Dir != "" {
		opts.Package, opts.PackageTarget = j.Installed.Dir, PackageTarget
	}
	if j.Installed.Image != "" {
		opts.Image = j.Installed.Image
	}
	opts.Timeout = j.Timeout
	opts.Idle = j.Idle
	seed := j.Seed
	opts.BaitSeed = &seed
	timings := ""
	if g.TimingsDir != "" {
		timings = filepath.Join(g.TimingsDir, j.Spec.Slug()+".json")
	}
	rep, err := gate.Run(ctx, g.Engine, gate.Options{Scan: opts, Verdict: g.Verdict, FailOn: verdict.FailOn{Never: true},
		Rounds: g.Rounds, NoReplay: g.NoReplay, Version: g.Version, Timings: timings})
	if in := j.Installed.Install; in != nil && rep != nil {
		// The install's phase and record join the scan's report, and the
		// verdict is given again over both.
		MergeInstall(rep, in.Report)
		err = errors.Join(err, g.Judge(rep))
	}
	return rep, err
}

// Judge implements Judge: the scan's verdict config over rep.
func (g GateScanner) Judge(rep *report.Report) error {
	return verdict.FinishWithin(rep, g.Verdict, verdict.DefaultMaxReport)
}

// Honeytoken is the value a secret environment variable gets: one of the
// bait's honeytokens, chosen by the variable's name, so that the scan
// finds it wherever it leaves the sandbox and redacts it in the report.
func Honeytoken(name string, t probes.Honeytokens) string {
	u := strings.ToUpper(name)
	switch {
	case strings.Contains(u, "AWS") && (strings.Contains(u, "ACCESS_KEY_ID") || strings.HasSuffix(u, "KEY_ID")):
		return t.AWSKeyID
	case strings.Contains(u, "AWS"):
		return t.AWSSecret
	case strings.Contains(u, "GITHUB") || strings.Contains(u, "GH_"):
		return t.GitHubToken
	}
	// A vendor's shape, when the name names one (probes.VendorKeys), so
	// that a server's check of the key's format passes.
	if v := t.VendorToken(name); v != "" {
		return v
	}
	return t.DotEnvPassword
}

// envOf is the spec's environment for a scan drawn from seed.
func envOf(s Spec, seed uint64) []string {
	tokens := probes.NewBait(seed).Tokens
	env := make([]string, 0, len(s.Env))
	for _, e := range s.Env {
		v := e.Value
		if e.Secret {
			v = Honeytoken(e.Name, tokens)
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}
