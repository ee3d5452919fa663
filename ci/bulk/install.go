package bulk

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// Installer fetches and installs one kind of spec on the host, running
// none of the package's code. Adding a kind (PyPI) is one file: an
// Installer, put in Options.Installers under its Kind.
type Installer interface {
	Install(ctx context.Context, s Spec) (Installed, error)
}

// Installed is a spec made ready to scan.
type Installed struct {
	// Dir is the host directory the scan shows at PackageTarget ("" for
	// none: an image holds its server).
	Dir string
	// Argv is the server's command in the sandbox.
	Argv []string
	// Image is the image to scan in ("" for the batch's).
	Image string
	// Version is the version resolved (the spec's pinned), Integrity the
	// package's as the registry gave it and the download matched.
	Version, Integrity string
	// Cached says the installed tree came from the cache.
	Cached bool
	// Entry is the entry point chosen, for packages.
	Entry *Entry
	// Notes say what the scan should know: an engines range the image's
	// runtime is outside of.
	Notes []string
	// Install is set when lifecycle scripts ran in a sandbox: the tree
	// they built is in Image, their record goes into the scan's report.
	Install *InstallRun
	// Alternatives are the other entry points a user could have started
	// (a package's other bins, when the input named none), tried in turn
	// when the chosen one does not answer initialize.
	Alternatives []Alternative
}

// Alternative is another entry point of an installed package.
type Alternative struct {
	Entry Entry
	Argv  []string
}

// PackageTarget is where the scan shows an installed package's directory
// (--package DIR:/package).
const PackageTarget = "/package"

// writeAtomic writes b to path through renameio: a temporary file in the
// same directory, synced, then renamed, so that a reader sees the old file
// or the new, never half of one, and an interrupted write leaves no path.
// The mode is 0644 whatever the umask, as the results always were.
func writeAtomic(path string, b []byte) error {
	if err := renameio.WriteFile(path, b, 0o644, renameio.WithTempDir(filepath.Dir(path)), renameio.WithStaticPermissions(0o644)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ImageInspector reads an image's configured command, for image specs.
type ImageInspector func(ctx context.Context, ref string) (entrypoint, cmd []string, err error)

// Images installs image specs: nothing to fetch (images are local, never
// pulled); the command is the image's entrypoint with the spec's
// arguments, or its CMD when the spec gives none, as docker run has it.
type Images struct {
	Inspect ImageInspector
}

// Install implements Installer.
func (im Images) Install(ctx context.Context, s Spec) (Installed, error) {
	ep, cmd, err := im.Inspect(ctx, s.Name)
	if err != nil {
		return Installed{}, fmt.Errorf("%w: image %s (images are never pulled; build or load it first): %w", ErrFetch, s.Name, err)
	}
	argv := append([]string{}, ep...)
	if len(s.Args) > 0 {
		argv = append(argv, s.Args...)
	} else {
		argv = append(argv, cmd...)
	}
	if len(argv) == 0 {
		return Installed{}, fmt.Errorf("%w: image %s has no entrypoint or command, and the spec gives none", ErrInstall, s.Name)
	}
	return Installed{Argv: argv, Image: s.Name, Version: imageTag(s.Name)}, nil
}

// EngineImages is Images reading the images from the engine.
func EngineImages(cli sandbox.Engine) Images {
	return Images{Inspect: func(ctx context.Context, ref string) ([]string, []string, error) {
		in, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			return nil, nil, err
		}
		if in.Config == nil {
			return nil, nil, nil
		}
		return in.Config.Entrypoint, in.Config.Cmd, nil
	}}
}

func imageTag(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return "latest"
}
