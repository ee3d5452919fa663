package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// loadLayerImage loads base plus one new layer (the tar in layer) as image
// ref, through the engine's image archive format (docker load): a
// manifest, a config naming every layer's diff id, and the new layer. The
// base's layers are named but not sent: the engine has them. The config is
// the base's, with labels added; createdBy names the layer in the history.
// (loadWorkspaceImage does the same for the workspace layer.)
func loadLayerImage(ctx context.Context, cli Engine, base image.InspectResponse, layer *os.File, ref string, labels map[string]string, createdBy string) error {
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding the %s layer: %w", createdBy, err)
	}
	h := sha256.New()
	size, err := io.Copy(h, layer)
	if err != nil {
		return fmt.Errorf("hashing the %s layer: %w", createdBy, err)
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding the %s layer: %w", createdBy, err)
	}
	diffID := "sha256:" + hex.EncodeToString(h.Sum(nil))
	cfg := map[string]any{}
	if base.Config != nil {
		b, err := json.Marshal(base.Config)
		if err != nil {
			return fmt.Errorf("encoding the config of %s: %w", base.ID, err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("decoding the config of %s: %w", base.ID, err)
		}
	}
	all, _ := cfg["Labels"].(map[string]any)
	if all == nil {
		all = map[string]any{}
	}
	for k, v := range labels {
		all[k] = v
	}
	cfg["Labels"] = all
	history := []map[string]string{}
	layers := []string{}
	for _, l := range base.RootFS.Layers {
		history = append(history, map[string]string{"created": epoch, "created_by": "base"})
		layers = append(layers, strings.TrimPrefix(l, "sha256:")+"/layer.tar")
	}
	history = append(history, map[string]string{"created": epoch, "created_by": createdBy})
	const newLayer = "new/layer.tar"
	layers = append(layers, newLayer)
	config, err := json.Marshal(map[string]any{
		"architecture": base.Architecture, "os": base.Os, "created": epoch, "config": cfg,
		"rootfs":  map[string]any{"type": "layers", "diff_ids": append(append([]string{}, base.RootFS.Layers...), diffID)},
		"history": history,
	})
	if err != nil {
		return fmt.Errorf("encoding the image config: %w", err)
	}
	configName := fmt.Sprintf("%x.json", sha256.Sum256(config))
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": layers}})
	if err != nil {
		return fmt.Errorf("encoding the image manifest: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := func() error {
			for _, e := range []struct {
				name string
				data []byte
			}{{"manifest.json", manifest}, {configName, config}} {
				if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Format: tar.FormatPAX}); err != nil {
					return err
				}
				if _, err := tw.Write(e.data); err != nil {
					return err
				}
			}
			if err := tw.WriteHeader(&tar.Header{Name: newLayer, Mode: 0o644, Size: size, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, layer, size); err != nil {
				return err
			}
			return tw.Close()
		}()
		pw.CloseWithError(err)
	}()
	resp, err := cli.ImageLoad(ctx, pr, client.ImageLoadWithQuiet(true))
	if err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("loading image %s: %w", ref, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	pr.Close()
	if err != nil {
		return fmt.Errorf("loading image %s: %w", ref, err)
	}
	if bytes.Contains(body, []byte(`"error"`)) {
		return fmt.Errorf("loading image %s: %s", ref, report.OneLine(string(body)))
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("the loaded image %s is not there: %w", ref, err)
	}
	return nil
}

// epoch is the creation time written into derived images' configs, so
// that the same inputs give the same image.
const epoch = "1970-01-01T00:00:00Z"
