package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// testDisk is the disk bound the tests scan with: small, so that a
// hostile writer passes it at once.
const testDisk = 20 << 20

// TestDiskBound: a read-only tool that writes as fast as it can, past the
// bound, wherever the server can write (a file in the upper layer, a file
// deleted while held open, /dev/shm, the mounted workspace), is stopped:
// the report has a disk problem and sandbox.diskExceeded, the scan's
// error is nil (its verdict is the bound's finding, not a failed run),
// and nothing is left on the host: no container, no layer directory, the
// host workspace as it was. A sparse file counts for what it claims, its
// apparent size; hard links count once.
func TestDiskBound(t *testing.T) {
	cli := sandboxtest.Docker(t)
	for _, tc := range []struct {
		name, probes string
		workspace    bool
		exceeded     bool
		call         int // the call it is stopped during
		perCall      bool
	}{
		{"file", `{"fill":{}}`, false, true, 1, false},
		{"file-per-call", `{"fill":{}}`, false, true, 1, true},
		{"deleted-held", `{"fill":{"unlink":true}}`, false, true, 1, false},
		{"workspace", `{"fill":{"path":"/workspace/fill"}}`, true, true, 1, false},
		// /dev/shm is as large as the bound: the writer gets ENOSPC there,
		// and what it writes next takes the total past the bound.
		{"shm", `[{"tool":"fill","arguments":{"path":"/dev/shm/fill"}},{"tool":"fill","arguments":{}}]`, false, true, 2, false},
		// A sparse file claims what a reader (or apply) would get: past
		// the bound it is stopped, as a dense one; hard links count once.
		// Made at once in a call that ends first, it is found by the
		// next measurement, in the call or after it (call -1: either).
		{"sparse", `{"fill":{"sparse":100000}}`, false, true, -1, false},
		{"links", `[{"tool":"fill","arguments":{"path":"/tmp/linked","mib":4,"links":8}}]`, false, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := fixtureOpts(t, "disk")
			opts.Probes = steps(t, tc.probes)
			opts.Disk, opts.DiskInterval = testDisk, 20*time.Millisecond
			opts.NoBoundary = true // a boundary call of the writing tool would write again
			if tc.perCall {
				opts.Isolation = sandbox.IsolationCall
			}
			var before map[string]string
			if tc.workspace {
				opts.Workspace = hostWorkspace(t)
				before = manifest(t, opts.Workspace)
			}
			layer, res, err := scanSeeingLayer(t, cli, opts)
			r := res.Report
			if err != nil {
				t.Fatalf("scan: %v; problems %+v", err, r.Problems)
			}
			if r.Sandbox.DiskLimit != testDisk || r.Sandbox.DiskExceeded != tc.exceeded {
				t.Fatalf("diskLimit %d, diskExceeded %v; want %d, %v; problems %+v", r.Sandbox.DiskLimit, r.Sandbox.DiskExceeded, testDisk, tc.exceeded, r.Problems)
			}
			var disk []report.Problem
			for _, p := range r.Problems {
				if p.Kind == "disk" {
					disk = append(disk, p)
				}
			}
			switch {
			case !tc.exceeded && len(disk) > 0:
				t.Errorf("disk problems within the bound: %+v", disk)
			case tc.exceeded && len(disk) != 1:
				t.Errorf("disk problems = %+v, want one", disk)
			case tc.exceeded && tc.call >= 0 && (disk[0].Call != tc.call || r.Complete):
				t.Errorf("not stopped during call %d: %+v, complete %v", tc.call, disk[0], r.Complete)
			}
			if tc.exceeded && tc.call >= 0 && (r.Timing == nil || r.Timing.DiskPeakBytes <= testDisk) {
				t.Errorf("timing.diskPeakBytes %+v, want past the bound", r.Timing)
			}
			if layer == "" {
				t.Fatal("the container's layer directory was never seen")
			}
			if _, err := os.Stat(layer); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the layer directory %s is left on the host: %v", layer, err)
			}
			if tc.workspace {
				if after := manifest(t, opts.Workspace); !reflect.DeepEqual(before, after) {
					t.Errorf("host workspace changed:\nbefore %v\nafter  %v", before, after)
				}
			}
		})
	}
}

// scanSeeingLayer scans (as scan does) and finds, while it runs, the
// layer directory of its container.
func scanSeeingLayer(t *testing.T, cli *client.Client, opts scan.Options) (string, scan.Result, error) {
	t.Helper()
	opts.Image = sandboxtest.NodeImage(t, cli)
	opts.Agent = sandboxtest.Agent(t)
	opts.Linger = sandboxtest.Linger
	opts.RunID = label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, opts.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), scanBound)
	defer cancel()
	found := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		defer close(found)
		f := filters.NewArgs(filters.Arg("label", label.Run+"="+opts.RunID), filters.Arg("label", label.Kind+"=sandbox"))
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
			if err != nil || len(list) == 0 {
				continue
			}
			if in, err := cli.ContainerInspect(ctx, list[0].ID); err == nil && in.GraphDriver.Data["UpperDir"] != "" {
				found <- filepath.Dir(in.GraphDriver.Data["UpperDir"])
				return
			}
		}
	}()
	res, err := scan.Run(ctx, cli, opts)
	close(stop)
	res.Report.Finish()
	return <-found, res, err
}
