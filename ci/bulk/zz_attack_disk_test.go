package bulk

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
)

// zeroWheel is a wheel of one file of size zero bytes, deflated (about a
// thousandth of its size), with METADATA's extra headers.
func zeroWheel(t *testing.T, name string, size int64, metadata string) []byte {
	t.Helper()
	dist := name + "-1.0.dist-info"
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create(name + "/blob")
	chunk := make([]byte, 1<<20)
	h := sha256.New()
	for n := int64(0); n < size; n += int64(len(chunk)) {
		c := chunk[:min(int64(len(chunk)), size-n)]
		w.Write(c)
		h.Write(c)
	}
	files := map[string]string{
		dist + "/METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n" + metadata,
		dist + "/WHEEL":    "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	record := fmt.Sprintf("%s/blob,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(h.Sum(nil)), size)
	if name == "srv" {
		files[dist+"/entry_points.txt"] = okEntry
	}
	for n, body := range files {
		w, _ := zw.Create(n)
		w.Write([]byte(body))
		s := sha256.Sum256([]byte(body))
		record += fmt.Sprintf("%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(s[:]), len(body))
	}
	record += dist + "/RECORD,,\n"
	w, _ = zw.Create(dist + "/RECORD")
	w.Write([]byte(record))
	zw.Close()
	return buf.Bytes()
}

// TestAttackTreeSizeUnbounded: each wheel may unpack to 2 GiB
// (maxTarballFiles), but nothing bounds the tree they make together: a
// package with N dependencies (up to maxResolved, 500) writes N times
// that, from downloads a thousandth of the size, and installTree runs
// without the fetch's context. Here two dependencies of 1.1 GiB each,
// about 2 MB downloaded, make a 2.2 GiB tree.
func TestAttackTreeSizeUnbounded(t *testing.T) {
	const each = 1100 << 20
	var files []pyindextest.File
	files = append(files, pyindextest.File{Name: pyindextest.WheelName("srv", "1.0"),
		Data: zeroWheel(t, "srv", 1, "Requires-Dist: dep1\nRequires-Dist: dep2\n")})
	download := 0
	for _, d := range []string{"dep1", "dep2"} {
		b := zeroWheel(t, d, each, "")
		download += len(b)
		files = append(files, pyindextest.File{Name: pyindextest.WheelName(d, "1.0"), Data: b})
	}
	ix := &pyindextest.Index{Files: files}
	p := pyInstaller(t, ix.Serve(t))
	in, err := p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	var total int64
	filepath.WalkDir(in.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			total += info.Size()
		}
		return nil
	})
	if total > maxTarballFiles {
		t.Errorf("installed a tree of %d MiB (over %d MiB) from %d KiB of wheels", total>>20, maxTarballFiles>>20, download>>10)
	}
}
