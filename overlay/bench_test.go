//go:build linux

package overlay

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAttribution measures what one tool call's file attribution
// costs: a snapshot of the upper dir and a delta against the previous one
// ("upper"), side by side with a before/after walk that reads and hashes
// every workspace file, which is what a workspace-diff checker such as
// check-hints.mjs does ("fullwalk"; counted as one walk per call, since the
// after walk of one call is the before walk of the next).
func BenchmarkAttribution(b *testing.B) {
	gen := 0 // every rewrite writes new bytes, across sub-benchmarks too
	for _, n := range []int{1_000, 10_000, 100_000} {
		lower := b.TempDir()
		makeWorkspace(b, filepath.Join(lower, "workspace"), n)
		for _, k := range []int{1, 100} {
			upper := b.TempDir()
			changed := changeFiles(b, upper, k, &gen)
			b.Run(fmt.Sprintf("files=%d/changed=%d/upper", n, k), func(b *testing.B) {
				u := &UpperDir{Upper: upper, Lowers: []string{lower}}
				prev, err := u.Snapshot(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rewrite(b, changed, &gen) // the call's writes: new content to hash
					cur, err := u.Snapshot(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					if d := Delta(prev, cur); len(d) != k {
						b.Fatalf("%d changes, want %d", len(d), k)
					}
					prev = cur
				}
			})
			b.Run(fmt.Sprintf("files=%d/changed=%d/fullwalk", n, k), func(b *testing.B) {
				prev := walkHash(b, lower, upper)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rewrite(b, changed, &gen)
					cur := walkHash(b, lower, upper)
					diff := 0
					for p, h := range cur {
						if prev[p] != h {
							diff++
						}
					}
					if diff != k {
						b.Fatalf("%d changes, want %d", diff, k)
					}
					prev = cur
				}
			})
		}
	}
}

// makeWorkspace writes n small files, 1000 per directory.
func makeWorkspace(b *testing.B, dir string, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.txt", i%1000)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// changeFiles makes k files in the upper dir that shadow workspace files.
func changeFiles(b *testing.B, upper string, k int, gen *int) []string {
	b.Helper()
	var out []string
	for i := 0; i < k; i++ {
		p := filepath.Join(upper, "workspace", "d000", fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		out = append(out, p)
	}
	rewrite(b, out, gen)
	return out
}

func rewrite(b *testing.B, files []string, gen *int) {
	b.Helper()
	*gen++
	for _, p := range files {
		if err := os.WriteFile(p, []byte(fmt.Sprintf("changed %d\n", *gen)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// walkHash reads and hashes every file of the merged workspace view.
func walkHash(b *testing.B, lower, upper string) map[string][32]byte {
	b.Helper()
	m := map[string][32]byte{}
	for _, root := range []string{lower, upper} { // upper last: it shadows
		err := filepath.WalkDir(filepath.Join(root, "workspace"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			rel, _ := filepath.Rel(root, p)
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			m[rel] = sum
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkJournal measures what reading one call's file changes costs in
// an upper dir that holds n files (made through the overlay, as a server
// floods its layer at startup): a walk of the layer ("walk"), side by
// side with the change journal's update ("journal"), each after the same
// one-file write.
func BenchmarkJournal(b *testing.B) {
	for _, n := range []int{10_000, 190_000} {
		merged, upper, lower := mountOverlay(b, func(string) {})
		for i := 0; i < n; i++ {
			d := filepath.Join(merged, "tmp/f", fmt.Sprintf("d%03d", i/1000))
			if i%1000 == 0 {
				must(b, os.MkdirAll(d, 0o755))
			}
			must(b, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%06d", i)), nil, 0o644))
		}
		target := filepath.Join(merged, "workspace/out.txt")
		must(b, os.MkdirAll(filepath.Dir(target), 0o755))
		ctx := context.Background()
		for _, mode := range []string{"walk", "journal"} {
			b.Run(fmt.Sprintf("files=%d/%s", n, mode), func(b *testing.B) {
				u := &UpperDir{Upper: upper, Lowers: []string{lower}}
				if mode == "journal" {
					j, err := OpenJournal(0)
					must(b, err)
					defer j.Close()
					u.Journal = j
				}
				prev, err := u.Snapshot(ctx)
				must(b, err)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					must(b, os.WriteFile(target, fmt.Appendf(nil, "%d %d", n, i), 0o644))
					if mode == "walk" {
						cur, err := u.Snapshot(ctx)
						must(b, err)
						if d := Delta(prev, cur); len(d) == 0 {
							b.Fatal("the write is not seen")
						}
						prev = cur
						continue
					}
					p, c, ok, err := u.Update(ctx, SnapshotOptions{})
					must(b, err)
					if !ok || len(Delta(p, c)) == 0 {
						b.Fatalf("the journal did not tell the write (ok %v)", ok)
					}
				}
			})
		}
	}
}
