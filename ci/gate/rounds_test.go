package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// flakyEnv is the fixture server's FlakyEnv: flaky_read writes when set.
const flakyEnv = "MCPSANDBOX_FIXTURE_FLAKY=1"

// roundEnv is the real engine, with env added to the server containers of
// the rounds named in lies: a round is told apart by its run id, the
// label every container of one scan.Run carries. The rounds' commands
// and starting states are the same by design, so the difference a test
// needs between them has to come from outside the scan.
type roundEnv struct {
	*client.Client
	lies map[int]bool // rounds, from 1, whose server gets flakyEnv

	mu   sync.Mutex
	runs []string   // run ids of the server containers, in order
	envs [][]string // each round's first server environment, as the scan made it
}

func (e *roundEnv) ContainerCreate(ctx context.Context, cfg *container.Config, host *container.HostConfig, nw *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	if cfg.Labels[label.Kind] == "sandbox" {
		e.mu.Lock()
		run := cfg.Labels[label.Run]
		if !slices.Contains(e.runs, run) {
			e.runs = append(e.runs, run)
			e.envs = append(e.envs, slices.Clone(cfg.Env))
		}
		round := slices.Index(e.runs, run) + 1
		e.mu.Unlock()
		if e.lies[round] {
			c := *cfg
			c.Env = append(slices.Clone(cfg.Env), flakyEnv)
			cfg = &c
		}
	}
	return e.Client.ContainerCreate(ctx, cfg, host, nw, p, name)
}

// TestRoundsFlakyServer scans the fixture's flaky_read three times; it
// lies in round 2 only. The report is round 1's with round 2's finding,
// marked [2] and unstable; the gate fails on it.
func TestRoundsFlakyServer(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	eng := &roundEnv{Client: cli, lies: map[int]bool{2: true}}
	var out bytes.Buffer
	opts := gate.Options{
		Scan: scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Argv: []string{fx.Target, "flaky", "honest"}, Mounts: []sandbox.Mount{fx},
			Agent: sandboxtest.Agent(t)}, Linger: sandboxtest.Linger},
		NoReplay: true, Rounds: 3,
		Outputs: []gate.Output{{Format: "json"}}, Stdout: &out,
	}
	rep, err := gate.Run(context.Background(), sandbox.Engine(eng), opts)
	if !errors.Is(err, gate.ErrFindings) {
		t.Fatalf("gate: %v, want %v; problems %+v", err, gate.ErrFindings, rep.Problems)
	}
	if len(eng.runs) != 3 {
		t.Fatalf("%d rounds' server containers, want 3", len(eng.runs))
	}
	// The honeytokens are in the environment: one seed for all rounds.
	if !slices.Equal(eng.envs[0], eng.envs[1]) || !slices.Equal(eng.envs[0], eng.envs[2]) {
		t.Errorf("the rounds' environments differ (not one bait seed): %q", eng.envs)
	}
	if !slices.ContainsFunc(eng.envs[0], func(e string) bool { return strings.HasPrefix(e, "GITHUB_TOKEN=") }) {
		t.Errorf("no honeytoken in the environment %q", eng.envs[0])
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Rule+" "+f.Tool+" "+itoas(f.Rounds))
	}
	want := []string{rules.ReadonlyWrites + " flaky_read [2]", rules.WritesOutsideWorkspace + " flaky_read [2]"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if rep.Rounds == nil || rep.Rounds.Run != 3 || len(rep.Rounds.Unstable) != 2 || rep.Summary.Unstable != 2 {
		t.Errorf("rounds %+v, summary %+v: want 3 run, 2 unstable", rep.Rounds, rep.Summary)
	}
	for _, p := range rep.Problems {
		if p.Round < 1 || p.Round > 3 {
			t.Errorf("problem without its round: %+v", p)
		}
	}
	var written report.Report
	if err := json.Unmarshal(out.Bytes(), &written); err != nil {
		t.Fatalf("the JSON report: %v", err)
	}
	if written.Rounds == nil || written.Summary.Unstable != 2 {
		t.Errorf("the written report has no rounds: %+v", written.Summary)
	}
}

func itoas(xs []int) string {
	b, _ := json.Marshal(xs)
	return string(b)
}
