package main

import (
	"context"
	"io"
)

func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) error { return nil }
