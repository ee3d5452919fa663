package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// BenchmarkWorkspaceImage measures what the hermetic workspace costs once
// per scan: building the workspace layer the first time ("cold"), and
// finding it by content hash afterwards ("cached"). Per-call cost does not
// depend on the workspace at all (see overlay's BenchmarkAttribution).
func BenchmarkWorkspaceImage(b *testing.B) {
	cli := sandboxtest.Docker(b)
	base := sandboxtest.NodeImage(b, cli)
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		ws := b.TempDir()
		for i := 0; i < n; i++ {
			d := filepath.Join(ws, fmt.Sprintf("d%03d", i/1000))
			if i%1000 == 0 {
				os.MkdirAll(d, 0o755)
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.txt", i%1000)), []byte(fmt.Sprintf("file %d %s\n", i, b.Name())), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		var ref string
		b.Run(fmt.Sprintf("files=%d/cold", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if ref != "" {
					b.StopTimer()
					removeBenchImage(ctx, b, cli, ref)
					b.StartTimer()
				}
				r, _, err := sandbox.WorkspaceImage(ctx, cli, base, ws, "/workspace", label.NewRunID())
				if err != nil {
					b.Fatal(err)
				}
				ref = r
			}
		})
		b.Run(fmt.Sprintf("files=%d/cached", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := sandbox.WorkspaceImage(ctx, cli, base, ws, "/workspace", label.NewRunID()); err != nil {
					b.Fatal(err)
				}
			}
		})
		if ref != "" {
			removeBenchImage(ctx, b, cli, ref)
		}
	}
}

// BenchmarkScanWorkspace is a whole scan (the fixture server, one call)
// with a workspace of 0 to 100,000 files, cold every time (the content
// changes between iterations, so no layer is ever found cached), copied
// into a layer and mounted copy-on-write, side by side.
func BenchmarkScanWorkspace(b *testing.B) {
	cli := sandboxtest.Docker(b)
	sandboxtest.NodeImage(b, cli)
	fx := sandboxtest.Fixture(b)
	agentPath := sandboxtest.Agent(b)
	ctx := context.Background()
	for _, n := range []int{0, 1_000, 10_000, 100_000} {
		ws := b.TempDir()
		for i := 0; i < n; i++ {
			d := filepath.Join(ws, fmt.Sprintf("d%03d", i/1000))
			if i%1000 == 0 {
				os.MkdirAll(d, 0o755)
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.txt", i%1000)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, copy := range []bool{true, false} {
			name := fmt.Sprintf("files=%d/mount", n)
			if copy {
				name = fmt.Sprintf("files=%d/copy", n)
			}
			b.Run(name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					// Cold: content no earlier iteration had.
					if err := os.WriteFile(filepath.Join(ws, "iteration"), []byte(label.NewRunID()), 0o644); err != nil {
						b.Fatal(err)
					}
					runID := label.NewRunID()
					b.StartTimer()
					res, err := scan.Run(ctx, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: "mcpsandbox/node:latest", Argv: []string{fx.Target, "honest"},
						Mounts: []sandbox.Mount{fx}, Agent: agentPath, Workspace: ws, CopyWorkspace: copy, RunID: runID}, NoSeed: true,
						Probes: benchProbe(b)})
					if err != nil {
						b.Fatal(err)
					}
					if want := map[bool]string{true: "copy", false: "mount"}[copy]; res.Report.Sandbox.WorkspaceBy != want {
						b.Fatalf("workspace by %q, want %q", res.Report.Sandbox.WorkspaceBy, want)
					}
					b.StopTimer()
					removeWorkspaceImages(ctx, b, cli, runID)
					b.StartTimer()
				}
			})
		}
	}
}

func benchProbe(b *testing.B) []probes.Step {
	s, err := probes.Parse([]byte(`[{"tool":"echo","arguments":{"text":"x"}}]`))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// removeWorkspaceImages removes the workspace and package layers that
// run runID made (label.Run), and no one else's: other processes' scans
// on the engine may be using theirs.
func removeWorkspaceImages(ctx context.Context, b *testing.B, cli *client.Client, runID string) {
	list, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", label.Run+"="+runID), filters.Arg("reference", sandbox.WorkspaceRepo))})
	if err != nil {
		b.Fatal(err)
	}
	for _, im := range list {
		removeBenchImage(ctx, b, cli, im.ID)
	}
}

// removeBenchImage removes an image the benchmark made, without force:
// were a container to use it, it would stay.
func removeBenchImage(ctx context.Context, b *testing.B, cli *client.Client, ref string) {
	_, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
	case cerrdefs.IsConflict(err):
		b.Logf("image %.19s left: %v", ref, err)
	default:
		b.Fatalf("removing image %.19s: %v", ref, err)
	}
}
