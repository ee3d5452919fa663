package twin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/scriptmodel"
)

func TestTailWriter(t *testing.T) {
	w := &tailWriter{max: 8}
	w.Write([]byte("0123456789"))
	w.Write([]byte("ab"))
	if got := w.tail(); got.Text != "456789ab" || got.Bytes != 12 || !got.Truncated {
		t.Errorf("tail %+v", got)
	}
}

func TestRunClient(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	out := runClient(ctx, RunIn{Argv: []string{"/bin/sh", "-c", "read x; echo got=$?; echo err >&2; exit 3"}, TimeoutMs: 10_000})
	if !out.Started || out.ExitCode != 3 || out.Stdout.Text != "got=1\n" || out.Stderr.Text != "err\n" || out.TimedOut {
		t.Errorf("stdin at EOF: %+v", out)
	}
	// A client that never ends is killed with its group at the bound.
	out = runClient(ctx, RunIn{Argv: []string{"/bin/sh", "-c", "sleep 60 & wait"}, TimeoutMs: 200})
	if !out.TimedOut {
		t.Errorf("not timed out: %+v", out)
	}
	out = runClient(ctx, RunIn{Argv: []string{"/no/such/client"}, TimeoutMs: int64(time.Second / time.Millisecond)})
	if out.Started || out.ExitCode != 127 || out.Error == "" {
		t.Errorf("missing client: %+v", out)
	}
}

func TestPrepareMakesAFreshHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	hh := &Host{ledger: newLedger(t.TempDir()), model: scriptmodel.New(scriptmodel.Options{})}
	out := hh.prepare(PrepareIn{Nonce: "n", Tool: Alpha, Home: home, Files: []File{{Path: filepath.Join(home, ".x/settings.json"), Content: "{}"}}})
	if !out.Fresh || len(out.Written) != 1 || len(out.Errors) > 0 {
		t.Errorf("first: %+v", out)
	}
	// A HOME that exists is not fresh.
	out = hh.prepare(PrepareIn{Nonce: "n", Tool: Alpha, Home: home})
	if out.Fresh {
		t.Errorf("second: %+v", out)
	}
}

func TestMergeEnv(t *testing.T) {
	got := strings.Join(mergeEnv([]string{"PATH=/img/bin", "HOME=/", "NODE=20"}, []string{"HOME=/h", "X=1", "X=2"}), " ")
	if got != "PATH=/img/bin NODE=20 HOME=/h X=2" {
		t.Errorf("merged %s", got)
	}
}
