package sandbox_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestReadThatKillsTheServer: a read that ends the session is recorded
// (errorKind transport) and makes the scan incomplete; the tool was called
// before.
func TestReadThatKillsTheServer(t *testing.T) {
	cli := sandboxtest.Docker(t)
	res, err := runScan(t, cli, fixtureOpts(t, "surfaces", "readcrash"))
	if !errors.Is(err, scan.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete", err)
	}
	r := res.Report
	if r.Complete || len(callsOf(r, "ping")) != 1 {
		t.Errorf("complete %v, ping calls %d", r.Complete, len(callsOf(r, "ping")))
	}
	if len(r.Reads) != 1 || r.Reads[0].Target != "crash://now" || r.Reads[0].ErrorKind != "transport" {
		t.Errorf("reads %+v", r.Reads)
	}
}

// TestSurfaceListBound: a resource list over the item bound is cut, said
// (server.surfacesTruncated, a protocol-bound problem), and what was
// listed before it is read.
func TestSurfaceListBound(t *testing.T) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "surfaces")
	opts.Bounds = sandbox.Bounds{MaxTools: 2}
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if !reflect.DeepEqual(r.Server.SurfacesTruncated, []string{"resources/list"}) || !hasProblem(r, sandbox.ProblemProtocolBound) {
		t.Errorf("surfacesTruncated %v, problems %+v", r.Server.SurfacesTruncated, r.Problems)
	}
	resources := 0
	for _, rd := range r.Reads {
		if rd.Surface == "resource" {
			resources++
		}
	}
	if resources != 2 {
		t.Errorf("%d resources read, want the 2 listed before the bound: %+v", resources, r.Reads)
	}
}
