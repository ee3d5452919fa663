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
		fmt.Fprint(stderr, "Usage: mcpsandbox images build [node|python|base]... | mcpsandbox images ls\n")
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
	}
	return usageError{fmt.Sprintf("unknown images subcommand %q", args[0])}
}

func runImagesBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("images build", "images build [flags] [node|python|base]...", stderr)
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
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAGS\tKIND\tID\tSIZE\tCREATED")
	for _, im := range list {
		tags := strings.Join(im.Tags, ",")
		if tags == "" {
			tags = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.19s\t%.1f MB\t%s\n", tags, im.Kind, im.ID, float64(im.Size)/1e6,
			time.Unix(im.Created, 0).UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
