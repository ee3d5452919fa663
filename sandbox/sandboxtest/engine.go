package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Docker returns a client of the engine, or skips the test (fails it under
// CI=true) when there is none. -short skips it too, except under CI=true.
func Docker(t testing.TB) *client.Client {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if testing.Short() && !ci {
		t.Skip("integration test: skipped by -short")
	}
	cli, err := sandbox.Connect(context.Background())
	if err != nil {
		if ci {
			t.Fatalf("CI=true and no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine (run ci/docker-up.sh): %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var nodeImage struct {
	once sync.Once
	err  error
}

// NodeImage makes sure mcpsandbox/node:latest exists (a no-op when its
// inputs did not change) and returns its name.
func NodeImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	nodeImage.once.Do(func() {
		_, nodeImage.err = images.Build(context.Background(), cli, "node", images.BuildOptions{})
	})
	if nodeImage.err != nil {
		t.Fatalf("building the node image: %v", nodeImage.err)
	}
	return "mcpsandbox/node:latest"
}

// Linger is the linger window tests use unless they test it: a moment,
// not the default's seconds, so that the suite stays short.
const Linger = 200 * time.Millisecond

// NoLeftovers fails the test at its end if any container of run id is
// still there once removalWait has passed: a teardown past the run's
// deadline sends the removal and does not wait for the engine to finish
// it (sandbox.TeardownGrace), so a container being removed is given the
// time a loaded engine takes; one that stays is left behind.
func NoLeftovers(t testing.TB, cli *client.Client, runID string) {
	t.Helper()
	t.Cleanup(func() {
		var list []container.Summary
		for end := time.Now().Add(removalWait); ; time.Sleep(250 * time.Millisecond) {
			var err error
			list, err = cli.ContainerList(context.Background(), container.ListOptions{All: true,
				Filters: filters.NewArgs(filters.Arg("label", label.Run+"="+runID))})
			if err != nil {
				t.Errorf("listing containers of run %s: %v", runID, err)
				return
			}
			if len(list) == 0 || time.Now().After(end) {
				break
			}
		}
		for _, c := range list {
			t.Errorf("container %.12s of run %s was left behind (state %s)", c.ID, runID, c.State)
			cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})
}

// removalWait is how long NoLeftovers lets a removal the engine has been
// sent finish: a loaded engine has taken over 30 s.
const removalWait = time.Minute

// Output runs argv in a sandbox from image and returns what it wrote to
// stdout and stderr, removing the container after.
func Output(t testing.TB, cli *client.Client, image string, argv ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runID := label.NewRunID()
	NoLeftovers(t, cli, runID)
	c, err := sandbox.Start(ctx, cli, sandbox.ContainerOptions{Image: image, Argv: argv, RunID: runID})
	if err != nil {
		t.Fatalf("starting %q in %s: %v", argv, image, err)
	}
	defer c.Close(ctx)
	c.Stdin().Close()
	out, err := io.ReadAll(c.Stdout())
	if err != nil {
		t.Fatalf("reading stdout of %q: %v", argv, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	tail, _, _ := c.Stderr()
	return string(out), tail
}

// ImageFile is one entry of an image made by Image: a directory (Dir), a
// symlink (Link), or a file with Content or the bytes of host file Source.
type ImageFile struct {
	Path    string // in the image, without the leading /
	Mode    int64
	Dir     bool
	Link    string
	Content []byte
	Source  string
	// UID and GID own the entry (default root).
	UID, GID int
}

// Image imports an image of files alone, FROM scratch (no shell, no
// libc, no USER: root), labelled as mcpsandbox's, and returns its
// reference. When the test ends it is removed, with every image
// mcpsandbox built on it (agent and workspace layers), and no other: two
// tests' images of the same files have the same layers, so what was built
// on this one is told by the label testBase, which an image built on it
// keeps from its config.
func Image(t testing.TB, cli *client.Client, files ...ImageFile) string {
	t.Helper()
	return ImageWith(t, cli, nil, files...)
}

// ImageWith is Image with Dockerfile instructions for the image's config
// (changes, such as "VOLUME /data").
func ImageWith(t testing.TB, cli *client.Client, changes []string, files ...ImageFile) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Path, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: time.Unix(1_700_000_000, 0), Format: tar.FormatPAX}
		data := f.Content
		switch {
		case f.Dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.Path+"/"
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		default:
			if f.Source != "" {
				b, err := os.ReadFile(f.Source)
				if err != nil {
					t.Fatal(err)
				}
				data = b
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runID := label.NewRunID()
	ref := "mcpsandbox/test:" + runID
	changes = append([]string{}, changes...)
	// Owned by this process, so that no clean --images takes it before the
	// test's containers use it.
	for k, v := range label.Set(runID, map[string]string{label.Kind: "test", label.Owner: label.SelfOwner(), testBase: runID}) {
		changes = append(changes, fmt.Sprintf("LABEL %s=%s", k, v))
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err != nil {
		t.Fatalf("importing a test image: %v", err)
	}
	out, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("importing a test image: %v %s", err, out)
	}
	base, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatalf("importing a test image: %v", err)
	}
	t.Cleanup(func() { removeWithDerived(t, cli, base, runID) })
	return ref
}

// testBase labels an image Image made with its run id. The images built
// on it keep the label (the run and kind labels they get anew), so that
// a test removes what was built on its image and not what another test,
// of this process or another, built on an image of the same files.
const testBase = "dev.mcpsandbox.test-base"

// removeWithDerived removes base and every image of mcpsandbox's built on
// it: labelled testBase=runID, its layers starting with base's.
func removeWithDerived(t testing.TB, cli *client.Client, base image.InspectResponse, runID string) {
	ctx := context.Background()
	list, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter), filters.Arg("label", testBase+"="+runID))})
	if err != nil {
		t.Errorf("listing images: %v", err)
		return
	}
	for _, s := range list {
		if s.ID == base.ID {
			continue
		}
		in, err := cli.ImageInspect(ctx, s.ID)
		if err != nil || len(in.RootFS.Layers) <= len(base.RootFS.Layers) {
			continue
		}
		if slices.Equal(in.RootFS.Layers[:len(base.RootFS.Layers)], base.RootFS.Layers) {
			if _, err := cli.ImageRemove(ctx, s.ID, image.RemoveOptions{Force: true}); err != nil {
				t.Errorf("removing image %.19s: %v", s.ID, err)
			}
		}
	}
	if _, err := cli.ImageRemove(ctx, base.ID, image.RemoveOptions{Force: true}); err != nil {
		t.Errorf("removing image %.19s: %v", base.ID, err)
	}
}

// FixtureImage returns an image FROM scratch that holds the fixture
// server, a static binary, at FixtureMount and nothing else.
func FixtureImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	return Image(t, cli, ImageFile{Path: strings.TrimPrefix(FixtureMount, "/"), Mode: 0o755, Source: Fixture(t).Source})
}
