package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// seed copies files into a created container, owned by the sandbox user,
// making the directories they need (0700 under the home directory). Files
// in /workspace that the host workspace already has are left alone: the
// server sees the user's file, not ours.
func seed(ctx context.Context, cli Engine, id string, files []probes.SeedFile, hostWorkspace string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	times := seedTimes(files, time.Now())
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		if hostWorkspace != "" && strings.HasPrefix(f.Path, "/workspace/") {
			if _, err := os.Lstat(filepath.Join(hostWorkspace, strings.TrimPrefix(f.Path, "/workspace/"))); err == nil {
				continue
			}
		}
		var parents []string
		for d := path.Dir(f.Path); d != "/" && d != "/workspace" && d != "/home/sandbox" && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			mode := int64(0o755)
			if strings.HasPrefix(d, "/home/sandbox/") {
				mode = 0o700
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode,
				Uid: images.UID, Gid: images.GID, ModTime: times[d], Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode,
			Size: int64(len(f.Content)), Uid: images.UID, Gid: images.GID, ModTime: times[f.Path], Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(f.Content)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("seeding the canary files: %w", err)
	}
	return nil
}

// seedTimes gives each seed file its time (the bait's, or its drawn age
// before now when the bait has none), and each
// directory above one (below / and the home directory) the time of the
// youngest file in it, as if the files had been written then.
func seedTimes(files []probes.SeedFile, now time.Time) map[string]time.Time {
	now = now.Truncate(time.Second)
	out := map[string]time.Time{}
	for _, f := range files {
		t := f.ModTime
		if t.IsZero() {
			t = now.Add(-f.Age)
		}
		out[f.Path] = t
		for d := path.Dir(f.Path); d != "/" && d != "."; d = path.Dir(d) {
			if t.After(out[d]) {
				out[d] = t
			}
		}
	}
	return out
}
