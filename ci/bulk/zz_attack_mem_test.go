package bulk

import (
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

func heapMB() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc >> 20
}

func TestAttackPageMemory(t *testing.T) {
	var b strings.Builder
	sum := strings.Repeat("a", 64)
	for i := 0; b.Len() < maxIndexPage-200; i++ {
		fmt.Fprintf(&b, "<a href=s-%d-py3-none-any.whl#sha256=%s>\n", i, sum)
	}
	body := []byte(b.String())
	b = strings.Builder{}
	base, _ := url.Parse("http://127.0.0.1:1/simple/s/")
	before := heapMB()
	files := parseIndexPage(base, "s", body)
	after := heapMB()
	t.Logf("page %d MB, %d files, heap +%d MB", len(body)>>20, len(files), after-before)
	runtime.KeepAlive(files)
}
