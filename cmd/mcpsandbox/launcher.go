package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// launch turns a launcher line in so.Argv (npx -y PKG ARG..., npm exec,
// pnpm dlx, bunx, yarn dlx) into the package fetched on the host by
// bulk's fetcher (its cache, integrity checks and sandboxed install; none
// of the package's code runs on the host), mounted at bulk.PackageTarget
// and started from there with the arguments as given. Any other command
// is left as it is. What the install scripts did, if any ran, is
// returned for the report.
// bind: the package slot is the workspace's (run --same-path): the tree is
// bound read-only instead, as --mount binds.
func launch(ctx context.Context, cli engineImages, so *sandbox.SessionOptions, bind bool, index string, stderr io.Writer) (*bulk.InstallRun, error) {
	spec, ok, err := bulk.ParseLauncher(so.Argv)
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, usageError{fmt.Sprintf("%v (run a package's server with its launcher line, npx -y PKG [ARG...], or mount its code with --package DIR)", err)}
	}
	if so.Package != "" && !so.PackageIsWorkspace && !bind {
		return nil, usageError{fmt.Sprintf("%s fetches its package: --package is for a server's code on the host, not both", spec.Source)}
	}
	if spec.Kind == bulk.KindPyPI {
		return nil, launchPython(ctx, cli, so, spec, bind, index, stderr)
	}
	line := append([]string{}, so.Argv...)
	npm := newNPM(cli, defaultBulkCache(), "", *so, bulk.DefaultFetchTimeout, true)
	asked := spec.Name
	if spec.Version != "" {
		asked += "@" + spec.Version
	}
	fmt.Fprintf(stderr, "mcpsandbox: %s: resolving %s on the npm registry; none of its code runs on the host\n", report.Printable(spec.Source), report.Printable(asked))
	fctx, cancel := context.WithTimeout(ctx, bulk.DefaultFetchTimeout)
	defer cancel()
	in, err := npm.Install(fctx, spec)
	if err != nil {
		if errors.Is(err, bulk.ErrFetch) {
			return nil, usageError{fmt.Sprintf("%s: %v", spec.Source, err)}
		}
		return nil, fmt.Errorf("%s: %w", spec.Source, err)
	}
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "mcpsandbox: %s: %s\n", spec.Name, report.Printable(n))
	}
	from := "fetched with scripts off into " + npm.Cache
	if in.Cached {
		from = "from the cache " + npm.Cache
	}
	fmt.Fprintf(stderr, "mcpsandbox: %s@%s (%s), %s; the server runs as %s\n", spec.Name, in.Version, in.Integrity, report.Printable(from), report.Printable(strings.Join(in.Argv, " ")))
	so.Argv = in.Argv
	if so.PackageIsWorkspace || bind {
		// The package slot is the workspace's (--same-path): the tree is
		// bound read-only, as --mount binds (it is readable: treeDirMode).
		so.Mounts = append(so.Mounts, sandbox.Mount{Source: in.Dir, Target: bulk.PackageTarget})
	} else {
		so.Package, so.PackageTarget = in.Dir, bulk.PackageTarget
	}
	if in.Image != "" {
		so.Image = in.Image
	}
	so.Source = &report.PackageSource{Line: line, Registry: "npm", Name: spec.Name, Version: in.Version, Integrity: in.Integrity, Entry: packageEntry(in.Entry)}
	return in.Install, nil
}

// launchPython fetches a Python launcher line's package (uvx, pipx run,
// uv tool run) from the index as wheels into the cache (bulk.PyPI: each
// wheel checked against the index's hash and its own RECORD, installed
// in Go, none of its code run on the host) and starts its console script
// in the python image, built from the host's files when missing, unless
// --image names another.
func launchPython(ctx context.Context, cli engineImages, so *sandbox.SessionOptions, spec bulk.Spec, bind bool, index string, stderr io.Writer) error {
	line := append([]string{}, so.Argv...)
	if index == "" {
		index = bulk.DefaultIndexURL
	}
	pypi, err := pythonInstaller(ctx, cli, defaultBulkCache(), index)
	if err != nil {
		return err
	}
	image := pypi.Image
	if so.Image != defaultImage {
		image, pypi.Image = so.Image, so.Image
	}
	fmt.Fprintf(stderr, "mcpsandbox: %s: resolving %s on %s as wheels for Python %s; none of its code runs on the host\n",
		report.Printable(spec.Source), report.Printable(spec.Name+spec.Version), report.Printable(index), pypi.Target.Version)
	fctx, cancel := context.WithTimeout(ctx, bulk.DefaultFetchTimeout)
	defer cancel()
	in, err := pypi.Install(fctx, spec)
	if err != nil {
		if errors.Is(err, bulk.ErrFetch) || errors.Is(err, bulk.ErrInstall) {
			return usageError{fmt.Sprintf("%s: %v", spec.Source, err)}
		}
		return fmt.Errorf("%s: %w", spec.Source, err)
	}
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "mcpsandbox: %s: %s\n", spec.Name, report.Printable(n))
	}
	from := "installed into " + in.Dir
	if in.Cached {
		from = "from the cache " + in.Dir
	}
	fmt.Fprintf(stderr, "mcpsandbox: %s %s (%s), %s; the server runs in %s as %s\n", spec.Name, in.Version, in.Integrity, report.Printable(from), image, report.Printable(strings.Join(in.Argv, " ")))
	so.Argv, so.Image = in.Argv, image
	if so.PackageIsWorkspace || bind {
		so.Mounts = append(so.Mounts, sandbox.Mount{Source: in.Dir, Target: bulk.PackageTarget})
	} else {
		so.Package, so.PackageTarget = in.Dir, bulk.PackageTarget
	}
	so.Source = &report.PackageSource{Line: line, Registry: "pypi", Name: spec.Name, Version: in.Version, Integrity: in.Integrity, Entry: packageEntry(in.Entry)}
	return nil
}

// indexURLFlag defines --index-url, where a Python launcher line's
// package comes from.
func indexURLFlag(fs *pflag.FlagSet) *string {
	return fs.String("index-url", bulk.DefaultIndexURL, "package index (PEP 503's simple API) a uvx, pipx run or uv tool run line's package and its dependencies are fetched from, as wheels checked against its hashes")
}

// pythonInstaller is the fetch of Python packages: wheels from index
// into cache, for the python image (built from the host's files when
// missing, by its content tag) and its interpreter.
func pythonInstaller(ctx context.Context, cli engineImages, cache, index string) (bulk.PyPI, error) {
	py, err := images.PythonOf(ctx)
	if err != nil {
		return bulk.PyPI{}, err
	}
	built, err := images.Build(ctx, cli, "python", images.BuildOptions{})
	if err != nil {
		return bulk.PyPI{}, fmt.Errorf("the python image: %w", err)
	}
	return bulk.PyPI{Cache: cache, IndexURL: index, Image: built.Ref,
		Target: bulk.PyTarget{Version: py.Version, Machine: py.Machine, GlibcMajor: py.GlibcMajor, GlibcMinor: py.GlibcMinor}}, nil
}

// packageEntry is the entry point chosen, as the report says it.
func packageEntry(e *bulk.Entry) *report.PackageEntry {
	if e == nil {
		return nil
	}
	return &report.PackageEntry{Path: e.Path, Bin: e.Bin, Why: e.Why}
}
