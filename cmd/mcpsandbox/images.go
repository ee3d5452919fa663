package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

func runImages(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, "Usage: mcpsandbox images build [base|node|python|strace|build]... | mcpsandbox images ls | mcpsandbox images prune [--cache-size SIZE]\n")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usageError{"images needs a subcommand: build or ls"}
	}
	switch args[0] {
	case "build":
		return runImagesBuild(ctx, args[1:], stdout, stderr)
	case "ls", "list":
		return runImagesList(ctx, args[1:], stdout, stderr)
	case "prune":
		return runImagesPrune(ctx, args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("unknown images subcommand %q", args[0])}
}

func runImagesBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("images build", "images build [flags] [base|node|python|strace|build]...", stderr)
	quiet := fs.BoolP("quiet", "q", false, "print only the image references")
	if err := parse(fs, args); err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"base", "node"}
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	opts := images.BuildOptions{Progress: stderr}
	if *quiet {
		opts.Progress = nil
	}
	for _, n := range names {
		res, err := images.Build(ctx, cli, n, opts)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, res.Ref)
	}
	return nil
}

func runImagesList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("images ls", "images ls", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := images.List(ctx, cli)
	if err != nil {
		return err
	}
	cache, err := sandbox.ListCache(ctx, cli, "")
	if err != nil {
		return err
	}
	cached := map[string]sandbox.CachedImage{}
	var total int64
	for _, im := range cache {
		cached[im.ID] = im
		total += im.Own
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAGS\tKIND\tID\tSIZE\tOWN\tLAST USED\tIN USE\tCREATED")
	for _, im := range list {
		tags := strings.Join(im.Tags, ",")
		if tags == "" {
			tags = "<none>"
		}
		own, used, inUse := "-", "-", "-"
		if c, ok := cached[im.ID]; ok {
			own, used, inUse = formatBytes(c.Own), "never", "no"
			if !c.LastUsed.IsZero() {
				used = c.LastUsed.UTC().Format(time.RFC3339)
			}
			if c.InUse {
				inUse = "yes"
			}
			if c.Kept {
				inUse += " (kept)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.19s\t%s\t%s\t%s\t%s\t%s\n", tags, im.Kind, im.ID, formatBytes(im.Size), own, used, inUse,
			time.Unix(im.Created, 0).UTC().Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "cache: %d image(s), %s in their own layers (scan --cache-size bounds it, default %s; OWN is what an image adds to its base)\n",
		len(cache), formatBytes(total), formatBytes(sandbox.DefaultCacheSize))
	return err
}

func runImagesPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("images prune", "images prune [--cache-size SIZE]", stderr)
	size := cacheSizeFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	res, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{MaxBytes: size()})
	for _, im := range res.Removed {
		fmt.Fprintf(stdout, "evicted %s (%s)\n", im.Ref, formatBytes(im.Own))
	}
	fmt.Fprintf(stdout, "the cache holds %s (bound %s); %d image(s) over the bound are in use or kept\n", formatBytes(res.Size), formatBytes(size()), len(res.Pinned))
	return err
}
