package bulk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
)

// TestAttackPagesKeptForTheWholeResolve: every project page the resolver
// reads stays parsed in memory (resolve's pages map) until the resolve
// ends, though a project is picked from its page once. A page of
// maxIndexPage (64 MiB) parses to about 270 MiB of pyFiles, and a
// resolve reads up to maxResolved (500) pages. Here four dependencies'
// pages of 16 MiB each: the heap grows by each page the resolver has
// already picked from.
func TestAttackPagesKeptForTheWholeResolve(t *testing.T) {
	deps := []string{"dep1", "dep2", "dep3", "dep4"}
	wheels := map[string][]byte{}
	var reqs strings.Builder
	for _, d := range deps {
		fmt.Fprintf(&reqs, "Requires-Dist: %s\n", d)
		wheels[pyindextest.WheelName(d, "1.0")] = pyindextest.Wheel(d, "1.0", map[string]string{d + ".py": ""}, "", "")
	}
	wheels[pyindextest.WheelName("srv", "1.0")] = pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, reqs.String(), okEntry)
	var mu sync.Mutex
	heap := map[string]uint64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
			w.Write(wheels[name])
			return
		}
		project := strings.Trim(strings.TrimPrefix(r.URL.Path, "/simple/"), "/")
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		heap[project] = m.HeapAlloc
		mu.Unlock()
		name := pyindextest.WheelName(project, "1.0")
		s := sha256.Sum256(wheels[name])
		var b strings.Builder
		fmt.Fprintf(&b, "<a href=\"/files/%s#sha256=%x\">x</a>\n", name, s)
		if project != "srv" {
			junk := strings.Repeat("ab", 32)
			for i := 0; b.Len() < 16<<20; i++ {
				fmt.Fprintf(&b, "<a href=%s-0.%d-py3-none-any.whl#sha256=%s>\n", project, i, junk)
			}
		}
		w.Write([]byte(b.String()))
	}))
	defer srv.Close()
	p := pyInstaller(t, srv.URL+"/simple/")
	if _, err := p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"}); err != nil {
		t.Fatal(err)
	}
	grown := int64(heap["dep4"]) - int64(heap["dep1"])
	t.Logf("heap when each page was asked for: %v", heap)
	if grown > 64<<20 {
		t.Errorf("the heap grew by %d MiB over three pages already picked from (%s)", grown>>20, hex.EncodeToString(nil))
	}
}
