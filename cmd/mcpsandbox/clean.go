package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("clean", "clean [--images]", stderr)
	withImages := fs.Bool("images", false, "also remove the images: the runtime images and the cache (workspace, package and agent layers)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	n, err := sandbox.Clean(ctx, cli, sandbox.CleanOptions{Images: *withImages})
	fmt.Fprintf(stdout, "removed %d object(s) labelled dev.mcpsandbox.managed=true\n", n)
	return err
}
