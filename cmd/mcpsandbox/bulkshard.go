package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/bulk/k8sjob"
)

// runBulkMerge is `mcpsandbox bulk merge`.
func runBulkMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bulk merge", "bulk merge [--results OUT] DIR...   (DIR: a results directory of bulk, one per shard)", stderr)
	out := fs.String("results", "bulk-results", "the merged results directory: state.json, reports/, the summaries, conflicts.json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{"bulk merge needs at least one results DIR"}
	}
	sum, conflicts, err := bulk.Merge(*out, fs.Args())
	for _, c := range conflicts {
		fmt.Fprintf(stderr, "mcpsandbox: %s: different results in %v; neither kept\n", c.Spec, c.Dirs)
	}
	if err != nil && !errors.Is(err, bulk.ErrConflict) {
		return err
	}
	fmt.Fprintf(stdout, "%d packages from %d directories; summary in %s\n", sum.Totals.Packages, fs.NArg(), filepath.Join(*out, "summary.md"))
	return err
}

// runBulkK8s is `mcpsandbox bulk k8s`: the Job on stdout.
func runBulkK8s(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bulk k8s", "bulk k8s --image REF --shards N --lists CONFIGMAP --list KEY... --results-claim PVC [flags] [-- BULK FLAGS]", stderr)
	var o k8sjob.Options
	fs.StringVar(&o.Name, "name", k8sjob.DefaultName, "the Job's name")
	fs.StringVar(&o.Namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	fs.StringVar(&o.Image, "image", "", "the tool's image, built from ci/bulk/k8sjob/Dockerfile and pushed where the cluster pulls from")
	fs.StringVar(&o.DindImage, "dind-image", k8sjob.DefaultDindImage, "the Docker-in-Docker sidecar's image")
	fs.IntVar(&o.Shards, "shards", 0, "shards (the Job's completions): pod I runs bulk --shard I/N")
	fs.IntVar(&o.Parallelism, "parallelism", 0, "pods at once (default: every shard)")
	fs.StringVar(&o.ListsConfigMap, "lists", "", "the config map holding the lists")
	fs.StringArrayVar(&o.Lists, "list", nil, "a key of the config map: one list (repeatable, in order)")
	fs.StringVar(&o.ResultsClaim, "results-claim", "", "the persistent volume claim the shards write to (ReadWriteMany when pods run on several nodes)")
	fs.StringArrayVar(&o.Images, "build", nil, "runtime image built in each pod's engine (repeatable; default base, node)")
	fs.StringVar(&o.CPU, "cpu", "", "the engine sidecar's CPU request and limit (the servers run there)")
	fs.StringVar(&o.Memory, "memory", "", "the engine sidecar's memory request and limit")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.BulkArgs = fs.Args() // after --: more flags of bulk
	if err := k8sjob.Write(stdout, o); err != nil {
		if errors.Is(err, k8sjob.ErrInvalid) {
			return usageError{err.Error()}
		}
		return err
	}
	return nil
}
