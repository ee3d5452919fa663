package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpsandbox/mcpsandbox/ci/corpus"
)

func main() {
	servers := flag.String("servers", "ci/corpus/servers.txt", "the servers file")
	o := corpus.Options{Stderr: os.Stderr}
	flag.StringVar(&o.Binary, "mcpsandbox", "bin/mcpsandbox", "the mcpsandbox binary")
	flag.StringVar(&o.Cache, "cache", "", "bulk's --cache: tarballs and installed trees (default: the user cache dir's mcpsandbox/corpus)")
	flag.StringVar(&o.Results, "results", "corpus-results", "bulk's results directory: each server's JSON report in reports/, state.json, summaries")
	flag.IntVar(&o.Jobs, "j", 2, "packages scanned at once (bulk -j)")
	flag.StringVar(&o.Image, "image", "", "bulk's --image (default: the node image, built when missing, by its content tag)")
	flag.BoolVar(&o.Resume, "resume", false, "scan only the servers the results directory does not have (default: all again, bulk --force)")
	only := flag.String("only", "", "scan only the servers whose package contains this")
	extra := flag.String("flags", "", "more bulk flags (the scan flags it passes on), space-separated")
	flag.Parse()
	if err := run(*servers, *only, *extra, o); err != nil {
		fmt.Fprintln(os.Stderr, "corpus:", err)
		os.Exit(1)
	}
}

func run(file, only, extra string, o corpus.Options) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	list, err := corpus.Parse(f)
	f.Close()
	if err != nil {
		return err
	}
	var picked []corpus.Server
	for _, s := range list {
		if strings.Contains(s.Package, only) {
			picked = append(picked, s)
		}
	}
	if o.Cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		o.Cache = filepath.Join(dir, "mcpsandbox", "corpus")
	}
	o.Flags = strings.Fields(extra)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows, err := corpus.Run(ctx, picked, o)
	corpus.WriteTable(os.Stdout, rows)
	return err
}
