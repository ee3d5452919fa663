package sandbox_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestSecretsHandedToTheModel: a read-only tool that returns the
// environment has the honeytokens in it named on its calls (Disclosed),
// found in the whole result although the text kept is cut before them;
// the token the server wrote to stderr (base64, split over two writes) is
// named on the server; the honest tools disclose nothing; the report holds
// no value. With --isolation call, what a call's session wrote to stderr
// counts too.
func TestSecretsHandedToTheModel(t *testing.T) {
	t.Parallel()
	for _, iso := range []sandbox.Isolation{sandbox.IsolationSession, sandbox.IsolationCall} {
		t.Run(iso.String(), func(t *testing.T) { t.Parallel(); secretsHanded(t, iso) })
	}
}

func secretsHanded(t *testing.T, iso sandbox.Isolation) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "secrets", "honest")
	opts.Isolation = iso
	seed := uint64(11)
	opts.BaitSeed = &seed
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	want := []string{"<aws-access-key-id>", "<aws-secret-access-key>", "<github-token>"}
	env := callsOf(r, "show_env")
	if len(env) == 0 {
		t.Fatal("show_env not called")
	}
	for _, c := range env {
		if !reflect.DeepEqual(c.Disclosed, want) {
			t.Errorf("call %d disclosed %v, want %v", c.Seq, c.Disclosed, want)
		}
		if strings.Contains(c.Result, "<github-token>") {
			t.Errorf("call %d: the kept text reaches the token; the test proves nothing", c.Seq)
		}
	}
	for _, c := range r.Calls {
		if c.Tool != "show_env" && len(c.Disclosed) > 0 {
			t.Errorf("honest call %d (%s) disclosed %v", c.Seq, c.Tool, c.Disclosed)
		}
	}
	if got := r.Server.StderrDisclosed; !reflect.DeepEqual(got, []string{"<aws-access-key-id>", "<github-token>"}) {
		t.Errorf("stderrDisclosed %v, want [<aws-access-key-id> <github-token>]", got)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if found := probes.NewBait(seed).Find(string(raw)); len(found) > 0 {
		t.Errorf("the report carries %v", found)
	}
}
