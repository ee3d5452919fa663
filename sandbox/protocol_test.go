package sandbox_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestTheSDKsProtocolVersions: the versions TestProtocolVersions scans
// under are the SDK's, newest first, and the scan asks for the newest. A
// version the SDK adds is scanned under at once; this says to look at
// what it changes (2024-11-05 is the one without tool annotations).
func TestTheSDKsProtocolVersions(t *testing.T) {
	versions := sandbox.ProtocolVersions()
	if want := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}; !slices.Equal(versions, want) {
		t.Fatalf("the SDK speaks %q; TestProtocolVersions covers %q", versions, want)
	}
	if sandbox.ProtocolVersion() != versions[0] {
		t.Errorf("the scan asks for %s, not the newest version %s", sandbox.ProtocolVersion(), versions[0])
	}
}

// TestProtocolVersions: the scan asks for the newest protocol version the
// SDK speaks (server/discover first) and goes on in whatever version a
// server that speaks only one answers, each the SDK speaks: the report
// records it, the lies are caught under every version with tool
// annotations, and under 2024-11-05, which has none, no hint finding is
// drawn although the tools send hints (the report keeps them as sent and
// a protocol problem says why they are not judged).
func TestProtocolVersions(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	versions := sandbox.ProtocolVersions()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "liar", "--protocol="+v)
			opts.NoSeed, opts.NoBoundary = true, true
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			rep := res.Report
			if rep.Server.ProtocolVersion != v || !strings.Contains(string(rep.Server.ServerInfo), "mcpsandbox-fixture") || len(rep.Server.Capabilities) == 0 {
				t.Errorf("server: protocol %q, serverInfo %s, capabilities %s; want %s and the fixture's", rep.Server.ProtocolVersion, rep.Server.ServerInfo, rep.Server.Capabilities, v)
			}
			frames, _ := res.Transcript.Frames()
			var first struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if len(frames) == 0 || json.Unmarshal(frames[0].Message, &first) != nil || first.Method != "server/discover" ||
				string(first.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"`+sandbox.ProtocolVersion()+`"` {
				t.Errorf("first frame %s: want server/discover asking for %s", frames[0].Message, sandbox.ProtocolVersion())
			}
			lying := toolByName(rep, "lying_read")
			if lying == nil || lying.Hints.ReadOnly == nil || !*lying.Hints.ReadOnly {
				t.Fatalf("lying_read as listed: %+v; want its readOnlyHint kept as sent", lying)
			}
			verdict.Finish(rep, verdict.Config{})
			var hinted []string
			for _, f := range rep.Findings {
				if f.Hint != "" {
					hinted = append(hinted, f.Rule+" "+f.Tool)
				}
			}
			noted := slices.ContainsFunc(rep.Problems, func(p report.Problem) bool {
				return p.Kind == "protocol" && strings.Contains(p.Message, "no tool annotations")
			})
			if v == "2024-11-05" {
				if len(hinted) > 0 || !noted {
					t.Errorf("hint findings %q (want none), the protocol problem said: %v; problems %+v", hinted, noted, rep.Problems)
				}
				return
			}
			if !slices.Contains(hinted, "readonly-writes lying_read") || noted {
				t.Errorf("hint findings %q: want readonly-writes on lying_read; the no-annotations problem: %v", hinted, noted)
			}
		})
	}
}

// TestToolAsksForInput: a tool that asks the client for input the scan
// does not give (an elicitation) ends its call with an error and the scan
// goes on: at 2026-07-28 a multi-round-trip result the client fails
// (errorKind client, the client's doing), before it the server's own
// error once the client refused its elicitation request (rpc).
func TestToolAsksForInput(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for v, kind := range map[string]string{"2026-07-28": "client", "2025-11-25": "rpc"} {
		t.Run(v, func(t *testing.T) {
			opts := fixtureOpts(t, "asks", "--protocol="+v)
			opts.NoSeed, opts.NoBoundary = true, true
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			c := callsOf(res.Report, "ask_confirm")
			if len(c) != 1 || c[0].ErrorKind != kind || !strings.Contains(c[0].Error, "elicitation") || !res.Report.Complete {
				t.Errorf("calls %+v (complete %v): want one ended by a %s error over the elicitation", c, res.Report.Complete, kind)
			}
			if kind == "client" && !strings.HasPrefix(c[0].Error, "the tool asked for input the client does not give") {
				t.Errorf("error %q does not say the tool asked for input", c[0].Error)
			}
		})
	}
}

// TestProtocolNoteOnce: with --isolation call every session meets the
// version without annotations; the report says so once.
func TestProtocolNoteOnce(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "flaky", "asks", "--protocol=2024-11-05")
	opts.NoSeed, opts.NoBoundary, opts.Isolation = true, true, sandbox.IsolationCall
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	n := 0
	for _, p := range res.Report.Problems {
		if p.Kind == "protocol" && strings.Contains(p.Message, "no tool annotations") {
			n++
		}
	}
	if len(res.Report.Calls) < 2 || n != 1 {
		t.Errorf("%d calls, %d notes of the version; want a session per call, one note; problems %+v", len(res.Report.Calls), n, res.Report.Problems)
	}
}
