package k8sjob

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/job.yaml")

func exampleOptions() Options {
	return Options{
		Image: "registry.example/mcpsandbox-bulk:1", Shards: 4, Parallelism: 2,
		ListsConfigMap: "mcpsandbox-lists", Lists: []string{"list.txt"},
		ResultsClaim: "mcpsandbox-results", BulkArgs: []string{"-j", "2"},
	}
}

// docs/bulk.md quotes testdata/job.yaml: it is what `bulk k8s` prints for
// the flags it shows.
func TestGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, exampleOptions()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "job.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("job differs from %s (go test -update to rewrite):\n%s", golden, b.String())
	}
	var again bytes.Buffer
	if err := Write(&again, exampleOptions()); err != nil || !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Error("the same options printed a different job")
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, mut := range map[string]func(*Options){
		"no image":          func(o *Options) { o.Image = "" },
		"no shards":         func(o *Options) { o.Shards = 0 },
		"parallelism":       func(o *Options) { o.Parallelism = 5 },
		"name":              func(o *Options) { o.Name = "Scan_All" },
		"long name":         func(o *Options) { o.Name = string(bytes.Repeat([]byte("a"), maxName+1)) },
		"no list":           func(o *Options) { o.Lists = nil },
		"list path":         func(o *Options) { o.Lists = []string{"../etc/passwd"} },
		"claim":             func(o *Options) { o.ResultsClaim = "" },
		"config map":        func(o *Options) { o.ListsConfigMap = "a b" },
		"expanded argument": func(o *Options) { o.BulkArgs = []string{"--env", "K=$(SECRET)"} },
		"negative backoff":  func(o *Options) { n := -1; o.BackoffLimitPerIndex = &n },
	} {
		t.Run(name, func(t *testing.T) {
			o := exampleOptions()
			mut(&o)
			var b bytes.Buffer
			err := Write(&b, o)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
			if b.Len() != 0 {
				t.Error("printed a job from invalid options")
			}
		})
	}
}

func TestYAMLKeepsOrderAndQuotesStrings(t *testing.T) {
	got, err := toYAML([]byte(`{"b":"yes","a":[{"x":1,"y":[]},"no",true,null],"on":{},"e":[],"k":"08"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `b: "yes"
a:
  - x: 1
    "y": []
  - "no"
  - true
  - null
"on": {}
e: []
k: "08"
`
	if string(got) != want {
		t.Errorf("toYAML:\n%s\nwant:\n%s", got, want)
	}
}

// The pod image cannot be built here (no registry), so the Dockerfile is
// held to what `images build` reads: every path the base and node
// manifests take from the host, other than the optional ones and the
// C library the packages bring, must be one the Dockerfile installs.
func TestTheDockerfileProvidesWhatImagesBuildReads(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// What each line of the Dockerfile leaves at a path, and what Debian's
	// packages it installs provide.
	provided := map[string]string{
		"/bin/busybox":                       "busybox-static",
		"/etc/ssl/certs/ca-certificates.crt": "ca-certificates",
		"/usr/bin/node":                      "/usr/bin/node",
		"/usr/lib/node_modules/npm":          "/usr/lib/node_modules/npm",
		"/usr/bin/npm":                       "/usr/bin/npm",
		"/usr/bin/npx":                       "/usr/bin/npx",
	}
	for _, m := range []string{"base", "node"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "images", m, "manifest"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f := bytes.Fields(line)
			if len(f) < 2 || f[0][0] == '#' {
				continue
			}
			var path string
			switch string(f[0]) {
			case "file", "bin", "tree":
				path = string(f[1])
			case "symlink":
				path = string(f[1])
				if !bytes.HasPrefix(f[1], []byte("/usr/bin/np")) {
					continue // made by the build, not read
				}
			default:
				continue // optional (?), made by the build, or included
			}
			want, ok := provided[path]
			if !ok {
				t.Errorf("images/%s/manifest reads %s: say in the Dockerfile how the pod image has it, then here", m, path)
				continue
			}
			if !bytes.Contains(df, []byte(want)) {
				t.Errorf("images/%s/manifest reads %s, which the Dockerfile does not provide (%s)", m, path, want)
			}
		}
	}
}
