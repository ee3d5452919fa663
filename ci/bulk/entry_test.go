package bulk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestChooseEntry(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, bin, main, named string
		path, chosen, why           string
		err                         bool
	}{
		{name: "bin string", pkg: "@s/srv", bin: `"dist/cli.js"`, path: "dist/cli.js", chosen: "srv", why: "the bin named like the package"},
		{name: "named like the package", pkg: "@s/srv", bin: `{"other":"o.js","srv":"./s.js"}`, path: "s.js", chosen: "srv", why: "the bin named like the package"},
		{name: "only one", pkg: "srv", bin: `{"srv-mcp":"m.js","srv-setup":"setup.js","remove-srv":"r.js"}`, path: "m.js", chosen: "srv-mcp", why: "the only bin (remove-srv, srv-setup left out"},
		{name: "never setup even if named like the package", pkg: "config", bin: `{"config":"c.js"}`, main: "index.js", path: "index.js", why: "main: every bin's name says"},
		{name: "several", pkg: "srv", bin: `{"a":"a.js","b":"b.js"}`, main: "lib/main.js", path: "lib/main.js", why: "main: bins a, b, none named like the package"},
		{name: "no main", pkg: "srv", path: "index.js", why: "index.js (no main): no bin"},
		{name: "named by the input", pkg: "srv", bin: `{"a":"a.js","b":"b.js"}`, named: "b", path: "b.js", chosen: "b", why: "the bin the input names"},
		{name: "a file named by the input", pkg: "srv", named: "./dist/index.js", path: "dist/index.js", why: "the file the input runs"},
		{name: "unknown bin", pkg: "srv", bin: `{"a":"a.js"}`, named: "zz", err: true},
		{name: "outside", pkg: "srv", bin: `"../../etc/x.js"`, err: true},
		{name: "bad bin", pkg: "srv", bin: `[1]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Manifest{Name: tc.pkg, Main: tc.main}
			if tc.bin != "" {
				m.Bin = json.RawMessage(tc.bin)
			}
			e, err := ChooseEntry(m, tc.named)
			if tc.err {
				if !errors.Is(err, ErrInstall) {
					t.Fatalf("got %+v, %v; want an ErrInstall", e, err)
				}
				return
			}
			if err != nil || e.Path != tc.path || e.Bin != tc.chosen || !strings.HasPrefix(e.Why, tc.why) {
				t.Errorf("got %+v, %v; want path %q bin %q why %q...", e, err, tc.path, tc.chosen, tc.why)
			}
		})
	}
}

func TestSatisfies(t *testing.T) {
	for _, tc := range []struct {
		v, r string
		ok   bool
	}{
		{"20.20.2", ">=18", true}, {"20.20.2", ">= 22", false}, {"20.20.2", "^20.10.0", true}, {"20.20.2", "^22", false},
		{"20.20.2", "~20.20.0", true}, {"20.20.2", "~20.19", false}, {"20.20.2", "18 || 20", true}, {"20.20.2", "18.x || >=22", false},
		{"20.20.2", ">=18 <20", false}, {"20.20.2", ">=18.0.0 <21.0.0", true}, {"20.20.2", "*", true}, {"20.20.2", "16 - 20", true},
		{"20.20.2", "16 - 19.5", false}, {"20.20.2", "20.20.2", true}, {"20.20.2", ">20", false}, {"20.20.2", "<=20", true},
		{"0.2.5", "^0.2.3", true}, {"0.3.0", "^0.2.3", false}, {"0.0.4", "^0.0.3", false},
	} {
		ok, err := Satisfies(tc.v, tc.r)
		if err != nil || ok != tc.ok {
			t.Errorf("Satisfies(%q, %q) = %v, %v; want %v", tc.v, tc.r, ok, err, tc.ok)
		}
	}
	if _, err := Satisfies("20.20.2", ">=banana"); err == nil {
		t.Error("a range not understood gave no error")
	}
}
