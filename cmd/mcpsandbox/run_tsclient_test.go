package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// tsSeen is what the TypeScript SDK client (testdata/tsclient/list.mjs)
// writes of what it saw.
type tsSeen struct {
	Lists [][]struct {
		Name        string                     `json:"name"`
		Annotations map[string]json.RawMessage `json:"annotations"`
	} `json:"lists"`
	Call    *string  `json:"call"`
	Changed bool     `json:"changed"`
	Errors  []string `json:"errors"`
}

// startTSClient starts the TypeScript SDK's client script (in
// testdata/tsclient, with its pipe.mjs) with args in the node image, its
// stdio for `run` to serve; the caller closes it.
func startTSClient(ctx context.Context, t *testing.T, cli sandbox.Engine, image, runID, script string, args ...string) *sandbox.Container {
	t.Helper()
	mounts := []sandbox.Mount{sandboxtest.TSSDK(t)}
	for _, f := range []string{script, "pipe.mjs"} {
		src, err := filepath.Abs(filepath.Join("testdata/tsclient", f))
		if err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, sandbox.Mount{Source: src, Target: "/opt/tsclient/" + f})
	}
	c, err := sandbox.Start(ctx, cli, sandbox.ContainerOptions{Image: image, Argv: append([]string{"node", "/opt/tsclient/" + script}, args...), RunID: runID, Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunTSClientSeesWhatWasJudged: the official TypeScript SDK's client,
// in the node image, uses the fixture's ambiguous server through an
// in-process `mcpsandbox run`. Without run each attack gives that client
// a read-only "peek" that writes (readOnlyHint true where Go's
// encoding/json reads none, a decoy's name, the list under an id in
// another form); through run the client sees peek once, never with
// readOnlyHint true, gets each list under its own id, and never a tool
// past the tool bound.
func TestRunTSClientSeesWhatWasJudged(t *testing.T) {
	cli := sandboxtest.Docker(t)
	image := sandboxtest.NodeImage(t, cli)
	fixture := sandboxtest.Fixture(t)
	sandboxtest.TSSDK(t)
	agent := sandboxtest.Agent(t)
	const maxTools = 7
	for _, attack := range []string{"case-hints", "name-decoy", "dup-hints", "proto-hints", "string-hint", "id-float", "id-string", "many"} {
		t.Run(attack, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			runID := label.NewRunID()
			sandboxtest.NoLeftovers(t, cli, runID)
			var steps []string
			if attack != "many" {
				steps = append(steps, "call")
			}
			c := startTSClient(ctx, t, cli, image, runID, "list.mjs", steps...)
			defer c.Close(ctx)
			logPath := filepath.Join(t.TempDir(), "run.jsonl")
			args := []string{"--rm", "--image", image, "--agent", agent, "--mount", fixture.Source + ":" + fixture.Target,
				"--log", logPath, "--phase-interval", "-1s", "--max-tools", fmt.Sprint(maxTools), "--",
				sandboxtest.FixtureMount, "ambiguous", attack, "honest=20"}
			var stderr bytes.Buffer
			runErr := runRun(ctx, args, c.Stdout(), c.Stdin(), &stderr)
			c.Stdin().Close()
			if err := c.Stop(ctx); err != nil {
				t.Log(err)
			}
			tail, _, _ := c.Stderr()
			if runErr != nil {
				t.Fatalf("run: %v\nrun's stderr:\n%s\nclient's stderr:\n%s", runErr, stderr.String(), tail)
			}
			var seen tsSeen
			_, line, ok := strings.Cut(tail, "TSCLIENT ")
			if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &seen) != nil {
				t.Fatalf("the client wrote no result:\n%s\nrun's stderr:\n%s", tail, stderr.String())
			}
			report := func() string {
				return fmt.Sprintf("the client saw %+v\nrun's stderr:\n%s", seen, stderr.String())
			}
			if len(seen.Errors) > 0 {
				t.Errorf("the client's errors: %q\n%s", seen.Errors, report())
			}
			want := 2
			if attack == "many" {
				want = 1
			}
			if len(seen.Lists) != want {
				t.Fatalf("%d lists, want %d\n%s", len(seen.Lists), want, report())
			}
			for i, tools := range seen.Lists {
				names := map[string]int{}
				for _, tl := range tools {
					names[tl.Name]++
					if tl.Name != "peek" {
						continue
					}
					// Its definition read two ways (or the answer it came in:
					// the first, which the session tells): no safety hint
					// is left. A later answer's id in another form is the
					// same place, told once: that list is the judge's
					// reading, corrected once peek wrote.
					for _, h := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
						v, ok := tl.Annotations[h]
						if idForm := attack == "id-float" || attack == "id-string"; ok && (!idForm || i == 0 || string(v) == "true") {
							t.Errorf("list %d: peek has %s %s\n%s", i+1, h, v, report())
						}
					}
				}
				switch {
				case attack == "many":
					if names["peek"] != 0 || len(tools) != maxTools {
						t.Errorf("list %d: %d tools, peek %d times: past the bound\n%s", i+1, len(tools), names["peek"], report())
					}
				case names["peek"] != 1:
					t.Errorf("list %d: peek listed %d times\n%s", i+1, names["peek"], report())
				case attack == "name-decoy" && (names["peek_decoy"] != 1 || len(tools) != 2):
					t.Errorf("list %d: %v\n%s", i+1, names, report())
				}
			}
			if attack != "many" && (seen.Call == nil || *seen.Call != "noted") {
				t.Errorf("peek's call: %v\n%s", seen.Call, report())
			}
			recs := readLog(t, logPath)
			has := func(f func(proxy.RunRecord) bool) bool {
				for _, r := range recs {
					if f(r) {
						return true
					}
				}
				return false
			}
			switch attack {
			case "many":
				if !has(func(r proxy.RunRecord) bool { return r.Type == "problem" && r.Reason == "tool-list-truncated" }) {
					t.Errorf("no tool-list-truncated problem in the log\n%s", report())
				}
			case "id-float", "id-string":
				if !has(func(r proxy.RunRecord) bool { return r.Type == "ambiguous" && r.Kind == "id-form" }) {
					t.Errorf("no id-form ambiguity in the log\n%s", report())
				}
			default:
				if !has(func(r proxy.RunRecord) bool { return r.Type == "ambiguous" && r.Tool == "peek" }) {
					t.Errorf("no ambiguity of peek's in the log\n%s", report())
				}
			}
			if attack == "case-hints" || attack == "name-decoy" || attack == "dup-hints" {
				if !has(func(r proxy.RunRecord) bool {
					return r.Type == "hint" && r.Tool == "peek" && strings.Contains(r.Reason, "stripped")
				}) {
					t.Errorf("no record of peek's hints stripped\n%s", report())
				}
			}
		})
	}
}
