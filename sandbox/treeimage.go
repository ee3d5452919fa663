package sandbox

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// InstalledRepo is the repository of the images LoadTreeImage makes for
// packages installed in a sandbox.
const InstalledRepo = "mcpsandbox/installed"

// LoadTreeImage makes image ref: image base plus one layer, the tar in
// layer, with entries relative to the root (as the engine archives a
// directory: /package's entries are package/...). It is labelled a cached
// package image (KindPackage), which eviction may remove once no
// container uses it; createdBy names the layer in the image's history.
func LoadTreeImage(ctx context.Context, cli Engine, base string, layer *os.File, ref, runID, createdBy string) error {
	img, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return fmt.Errorf("inspecting image %s: %w", base, err)
	}
	if err := loadLayerImage(ctx, cli, img, layer, ref, label.Set(runID, map[string]string{label.Kind: KindPackage}), createdBy); err != nil {
		return err
	}
	return TouchImage(ctx, cli, ref)
}

// TouchImage records a use of the cached image ref now, for
// least-recently-used eviction (a loaded image has no use recorded yet,
// and would go first).
func TouchImage(ctx context.Context, cli Engine, ref string) error {
	return touch(ctx, cli, ref, ref)
}
