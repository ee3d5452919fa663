package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/image"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
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
					cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
					b.StartTimer()
				}
				r, _, err := sandbox.WorkspaceImage(ctx, cli, base, ws, label.NewRunID())
				if err != nil {
					b.Fatal(err)
				}
				ref = r
			}
		})
		b.Run(fmt.Sprintf("files=%d/cached", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := sandbox.WorkspaceImage(ctx, cli, base, ws, label.NewRunID()); err != nil {
					b.Fatal(err)
				}
			}
		})
		cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
	}
}
