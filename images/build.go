package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// Client is the part of the Docker Engine API that building images uses.
type Client interface {
	ImageInspect(ctx context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageImport(ctx context.Context, source image.ImportSource, ref string, options image.ImportOptions) (io.ReadCloser, error)
	ImageTag(ctx context.Context, source, target string) error
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
}

// Repo is the repository every runtime image is tagged in: mcpsandbox/<name>.
const Repo = "mcpsandbox/"

// UID and GID are the unprivileged user of every image (named sandbox),
// and the default user of every sandbox.
const (
	UID = 10001
	GID = 10001
)

// User is UID:GID as Docker takes it.
func User() string { return strconv.Itoa(UID) + ":" + strconv.Itoa(GID) }

// BuildOptions configures Build.
type BuildOptions struct {
	// RunID labels the image with the run that built it.
	RunID string
	// HostRoot reads host files below this directory instead of "/"; tests
	// use it to build from a fixture tree.
	HostRoot string
	// Progress, if set, receives one line per step.
	Progress io.Writer
}

// Result says what Build did.
type Result struct {
	Name  string // runtime name
	Ref   string // mcpsandbox/<name>:<hash>
	ID    string // image id
	Built bool   // false when the image was already there
}

// Build makes image name from the host's files unless an image with the same
// content hash exists, and points mcpsandbox/<name>:latest at it.
func Build(ctx context.Context, cli Client, name string, opts BuildOptions) (Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	fs, err := assemble(name, hostFS{root: opts.HostRoot})
	if err != nil {
		return Result{}, fmt.Errorf("assembling image %s: %w", name, err)
	}
	changes := imageChanges(name)
	sum, err := fs.writeTar(io.Discard)
	if err != nil {
		return Result{}, fmt.Errorf("hashing image %s: %w", name, err)
	}
	hash := contentHash(sum, changes)
	ref := Repo + name + ":" + hash
	latest := Repo + name + ":latest"
	res := Result{Name: name, Ref: ref}

	if img, err := cli.ImageInspect(ctx, ref); err == nil {
		res.ID = img.ID
		fmt.Fprintf(progress, "%s: up to date (%s)\n", name, ref)
		if err := cli.ImageTag(ctx, ref, latest); err != nil {
			return res, fmt.Errorf("tagging %s as %s: %w", ref, latest, err)
		}
		return res, nil
	} else if !cerrdefs.IsNotFound(err) {
		return res, fmt.Errorf("inspecting image %s: %w", ref, err)
	}

	fmt.Fprintf(progress, "%s: building %s from the host's files (%d entries)\n", name, ref, len(fs.entries))
	runID := opts.RunID
	if runID == "" {
		runID = label.NewRunID()
	}
	all := append(changes,
		fmt.Sprintf("LABEL %s=%s", label.ContentHash, hash),
		fmt.Sprintf("LABEL %s=%s", label.Run, runID))

	// The tar is made a second time as it is sent; its hash must match the
	// first pass, or the host changed under us and the tag would lie.
	pr, pw := io.Pipe()
	sent := make(chan string, 1)
	go func() {
		s, err := fs.writeTar(pw)
		pw.CloseWithError(err)
		sent <- s
	}()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, ref, image.ImportOptions{Changes: all})
	if err != nil {
		pr.CloseWithError(err)
		<-sent
		return res, fmt.Errorf("importing image %s: %w", ref, err)
	}
	id, streamErr := readImportStream(rc)
	pr.Close() // unblocks the writer if the engine stopped reading early
	if s := <-sent; streamErr == nil && s != sum {
		streamErr = fmt.Errorf("host files changed during the build of %s; run it again", name)
	}
	if streamErr != nil {
		return res, fmt.Errorf("importing image %s: %w", ref, streamErr)
	}
	if id == "" {
		img, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			return res, fmt.Errorf("inspecting imported image %s: %w", ref, err)
		}
		id = img.ID
	}
	res.ID, res.Built = id, true
	if err := cli.ImageTag(ctx, ref, latest); err != nil {
		return res, fmt.Errorf("tagging %s as %s: %w", ref, latest, err)
	}
	fmt.Fprintf(progress, "%s: built %s\n", name, ref)
	return res, nil
}

// imageChanges are the Dockerfile instructions applied to an imported image.
func imageChanges(name string) []string {
	return []string{
		"ENV PATH=/usr/local/bin:/usr/bin:/bin",
		"USER " + User(),
		"WORKDIR /workspace",
		`CMD ["/bin/sh"]`,
		fmt.Sprintf("LABEL %s=true", label.Managed),
		fmt.Sprintf("LABEL %s=%s", label.Runtime, name),
		fmt.Sprintf("LABEL %s=runtime", label.Kind),
	}
}

func contentHash(tarSum string, changes []string) string {
	h := newHash()
	h.add(tarSum)
	for _, c := range changes {
		h.add(c)
	}
	return h.short()
}

// readImportStream reads the engine's JSON progress stream to its end and
// returns the image id it reports, or the error it carries.
func readImportStream(rc io.ReadCloser) (string, error) {
	defer rc.Close()
	dec := json.NewDecoder(rc)
	id := ""
	for {
		var m struct {
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return id, nil
			}
			return id, fmt.Errorf("reading the engine's answer: %w", err)
		}
		if m.Error != "" {
			return id, errors.New(m.Error)
		}
		if strings.HasPrefix(m.Status, "sha256:") {
			id = strings.TrimSpace(m.Status)
		}
	}
}

// Image is one runtime image, as List reports it.
type Image struct {
	Tags    []string
	ID      string
	Size    int64
	Created int64
	Runtime string
	Kind    string
}

// List returns every image mcpsandbox made, newest first.
func List(ctx context.Context, cli Client) ([]Image, error) {
	sums, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]Image, 0, len(sums))
	for _, s := range sums {
		tags := append([]string(nil), s.RepoTags...)
		sort.Strings(tags)
		out = append(out, Image{Tags: tags, ID: s.ID, Size: s.Size, Created: s.Created,
			Runtime: s.Labels[label.Runtime], Kind: s.Labels[label.Kind]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Created != out[j].Created {
			return out[i].Created > out[j].Created
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
