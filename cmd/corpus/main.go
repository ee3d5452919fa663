// Command corpus installs the real MCP servers of ci/corpus/servers.txt
// from npm, scans each with mcpsandbox (no probe files, --package) and
// prints how much of each the scan exercised. See `make corpus`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mcpsandbox/mcpsandbox/ci/corpus"
)

func main() {
	servers := flag.String("servers", "ci/corpus/servers.txt", "the servers file")
	o := corpus.Options{Log: os.Stderr}
	flag.StringVar(&o.Binary, "mcpsandbox", "bin/mcpsandbox", "the mcpsandbox binary")
	flag.StringVar(&o.Cache, "cache", "", "where packages are installed (default: the user cache dir's mcpsandbox/corpus)")
	flag.StringVar(&o.Results, "results", "corpus-results", "where each server's JSON report is written")
	flag.IntVar(&o.Jobs, "j", 2, "scans at once")
	flag.StringVar(&o.Image, "image", "", "the image to scan in (default: the node image, built now, by its content tag)")
	only := flag.String("only", "", "scan only the servers whose package contains this")
	extra := flag.String("flags", "", "more scan flags, space-separated")
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
		o.Cache = dir + "/mcpsandbox/corpus"
	}
	if err := os.MkdirAll(o.Results, 0o755); err != nil {
		return err
	}
	o.Flags = strings.Fields(extra)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Image == "" {
		if o.Image, err = corpus.BuildImage(ctx, o.Binary, "node"); err != nil {
			return err
		}
		fmt.Fprintln(o.Log, "scanning in", o.Image)
	}
	rows := corpus.Run(ctx, picked, o)
	corpus.WriteTable(os.Stdout, rows)
	return nil
}
