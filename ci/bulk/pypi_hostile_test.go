package bulk

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
)

// rawWheel writes a wheel of srv 1.0 whose extra entries are given raw:
// name, deflated bytes, declared size and the RECORD hash of the
// content; RECORD lists them with the hashes given.
func rawWheel(t *testing.T, name string, raw []rawEntry, metadata string) []byte {
	t.Helper()
	dist := name + "-1.0.dist-info"
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, e := range raw {
		w, err := zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, CompressedSize64: uint64(len(e.deflated)), UncompressedSize64: e.size, CRC32: e.crc})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.deflated)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", e.name, base64.RawURLEncoding.EncodeToString(e.sum), e.size)
	}
	for n, body := range map[string]string{dist + "/METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n" + metadata,
		dist + "/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n", dist + "/entry_points.txt": okEntry} {
		w, _ := zw.Create(n)
		w.Write([]byte(body))
		s := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(s[:]), len(body))
	}
	w, _ := zw.Create(dist + "/RECORD")
	w.Write([]byte(record.String() + dist + "/RECORD,,\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type rawEntry struct {
	name     string
	deflated []byte
	size     uint64
	crc      uint32
	sum      []byte
}

// zeros is n zero bytes deflated, their CRC32 and sha256, made once.
func zeros(t *testing.T, n int) rawEntry {
	t.Helper()
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestSpeed)
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	crc := crc32.NewIEEE()
	for left := n; left > 0; left -= len(chunk) {
		c := chunk[:min(len(chunk), left)]
		fw.Write(c)
		h.Write(c)
		crc.Write(c)
	}
	fw.Close()
	return rawEntry{deflated: buf.Bytes(), size: uint64(n), crc: crc.Sum32(), sum: h.Sum(nil)}
}

// TestPyPIUnpackBounds: a declared size near 2^64, which wrapped the
// sum of sizes back under the bound and read as nothing, is refused; so
// are packages that together unpack past the bound though each is under
// it.
func TestPyPIUnpackBounds(t *testing.T) {
	empty := sha256.Sum256(nil)
	wrap := rawWheel(t, "srv", []rawEntry{{name: "srv/big", deflated: []byte{3, 0}, size: ^uint64(0), sum: empty[:]}}, "")
	ix := &pyindextest.Index{Files: []pyindextest.File{{Name: pyindextest.WheelName("srv", "1.0"), Data: wrap}}}
	if _, err := pyInstaller(t, ix.Serve(t)).Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"}); !errors.Is(err, ErrWheel) || !strings.Contains(err.Error(), "unpacks to over") {
		t.Errorf("a size near 2^64: %v", err)
	}

	if raceEnabled {
		t.Skip("2.4 GB hashed: run without -race (make test does)")
	}
	z := zeros(t, 800<<20)
	var files []pyindextest.File
	for i, n := range []string{"srv", "dep1", "dep2"} {
		e := z
		e.name = n + "/zeros"
		meta := ""
		if i == 0 {
			meta = "Requires-Dist: dep1\nRequires-Dist: dep2\n"
		}
		files = append(files, pyindextest.File{Name: pyindextest.WheelName(n, "1.0"), Data: rawWheel(t, n, []rawEntry{e}, meta)})
	}
	ix = &pyindextest.Index{Files: files}
	p := pyInstaller(t, ix.Serve(t))
	if _, err := p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"}); !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), "in all") {
		t.Errorf("2.4 GB in three packages: %v", err)
	}
}

// TestPyPICentralDirectoryBound: a wheel whose central directory is past
// the bound (archive/zip reads it whole, some 200 bytes of memory a
// record, before any entry is checked) is refused by its end record.
func TestPyPICentralDirectoryBound(t *testing.T) {
	n := 800_000 // 47 bytes a record: 37 MB of directory
	var b bytes.Buffer
	lh := make([]byte, 30)
	binary.LittleEndian.PutUint32(lh, 0x04034b50)
	binary.LittleEndian.PutUint16(lh[4:], 20)
	binary.LittleEndian.PutUint16(lh[26:], 1)
	b.Write(lh)
	b.WriteString("a")
	ch := make([]byte, 46)
	binary.LittleEndian.PutUint32(ch, 0x02014b50)
	binary.LittleEndian.PutUint16(ch[4:], 20)
	binary.LittleEndian.PutUint16(ch[6:], 20)
	binary.LittleEndian.PutUint16(ch[28:], 1)
	for i := 0; i < n; i++ {
		b.Write(ch)
		b.WriteString("a")
	}
	eocd := make([]byte, 22)
	binary.LittleEndian.PutUint32(eocd, 0x06054b50)
	binary.LittleEndian.PutUint16(eocd[8:], uint16(n))
	binary.LittleEndian.PutUint16(eocd[10:], uint16(n))
	binary.LittleEndian.PutUint32(eocd[12:], 47) // lies: the offset bounds it
	binary.LittleEndian.PutUint32(eocd[16:], 31)
	b.Write(eocd)
	ix := &pyindextest.Index{Files: []pyindextest.File{{Name: pyindextest.WheelName("srv", "1.0"), Data: b.Bytes()}}}
	_, err := pyInstaller(t, ix.Serve(t)).Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"})
	if !errors.Is(err, ErrWheel) || !strings.Contains(err.Error(), "central directory") {
		t.Errorf("err %v", err)
	}
}

// TestPyPIOffIndexHosts: the hosts and addresses an index page or a
// redirect may not send the host to, in the spellings resolvers read as
// loopback, private or metadata addresses.
func TestPyPIOffIndexHosts(t *testing.T) {
	p := PyPI{IndexURL: "https://pypi.org/simple/"}
	for _, u := range []string{"https://localhost./x.whl", "https://LOCALHOST/x.whl", "https://a.localhost/x.whl", "https://2130706433/x.whl", "https://127.1/x.whl",
		"https://0x7f.0.0.1/x.whl", "https://0251.0376.0251.0376/x.whl", "https://100.100.100.200/x.whl", "https://169.254.169.254/x.whl",
		"https://[::a9fe:a9fe]/x.whl", "https://[64:ff9b::a9fe:a9fe]/x.whl", "https://[2002:a9fe:a9fe::]/x.whl", "https://[::ffff:10.0.0.1]/x.whl",
		"https://[fe80::1]/x.whl", "https://10.1.2.3/x.whl", "http://files.example.org/x.whl", "file:///etc/passwd", "https://198.18.0.1/x.whl"} {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.checkFileURL(pu); !errors.Is(err, ErrOffIndex) {
			t.Errorf("%s: allowed (%v)", u, err)
		}
	}
	for _, u := range []string{"https://files.pythonhosted.org/packages/x.whl", "https://pypi.org./x.whl", "https://93.184.215.14/x.whl", "https://[2606:4700::1111]/x.whl"} {
		pu, _ := url.Parse(u)
		if err := p.checkFileURL(pu); err != nil {
			t.Errorf("%s: refused: %v", u, err)
		}
	}
	for a, want := range map[string]bool{"8.8.8.8": true, "100.64.0.1": false, "::ffff:127.0.0.1": false, "2002:0a00:0001::": false, "64:ff9b::808:808": true, "0.1.2.3": false} {
		if got := publicAddr(netip.MustParseAddr(a)); got != want {
			t.Errorf("publicAddr(%s) = %v", a, got)
		}
	}
}
