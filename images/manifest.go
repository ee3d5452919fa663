package images

import (
	"bufio"
	"bytes"
	"debug/elf"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// manifests holds one folder per image: its manifest and any files it ships.
//
//go:embed */manifest base/rootfs
var manifests embed.FS

// Names returns the images that can be built.
func Names() []string { return []string{"base", "node", "python", "strace", "build"} }

// entryType is what an entry of the root filesystem is.
type entryType int

const (
	typeDir entryType = iota
	typeFile
	typeSymlink
)

// entry is one path of the image's root filesystem.
type entry struct {
	typ    entryType
	mode   fs.FileMode // permission bits, plus sticky
	uid    int
	source string // host path of a file's content, or ""
	data   []byte // inline content when source is ""
	target string // symlink target
}

// rootfs is an image's root filesystem, keyed by absolute path.
type rootfs struct {
	entries map[string]*entry
	// sources records the manifest lines, which are part of the content hash.
	lines []string
}

// hostFS is where host files are read; tests point it at a fixture tree.
type hostFS struct {
	root string // "" or "/" for the real host
}

func (h hostFS) path(p string) string { return filepath.Join(h.root, p) }

// assemble reads image name's manifest and resolves it against the host.
func assemble(name string, host hostFS) (*rootfs, error) {
	r := &rootfs{entries: map[string]*entry{}}
	if err := r.apply(name, host, map[string]bool{}); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rootfs) apply(name string, host hostFS, seen map[string]bool) error {
	if seen[name] {
		return fmt.Errorf("image %s includes itself", name)
	}
	seen[name] = true
	b, err := manifests.ReadFile(name + "/manifest")
	if err != nil {
		return fmt.Errorf("unknown image %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r.lines = append(r.lines, name+": "+line)
		f := strings.Fields(line)
		if err := r.directive(f, host, seen); err != nil {
			return fmt.Errorf("%s/manifest:%d: %s: %w", name, n, f[0], err)
		}
	}
	return sc.Err()
}

func (r *rootfs) directive(f []string, host hostFS, seen map[string]bool) error {
	args := f[1:]
	if name, ok := strings.CutSuffix(f[0], "?"); ok && len(args) > 0 {
		// Optional: only where the host has it (git: where the host has
		// it, the image has it too).
		src := args[0]
		if name == "file" && len(args) > 1 {
			src = args[1] // file DST SRC
		}
		if m, err := filepath.Glob(host.path(src)); err != nil || len(m) == 0 {
			return nil
		}
		f = append([]string{name}, args...)
	}
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("needs %d arguments, has %d", n, len(args))
		}
		return nil
	}
	switch f[0] {
	case "include":
		if err := need(1); err != nil {
			return err
		}
		return r.apply(args[0], host, seen)
	case "rootfs":
		if err := need(1); err != nil {
			return err
		}
		return r.addEmbedded(args[0])
	case "dir":
		if err := need(3); err != nil {
			return err
		}
		mode, err := strconv.ParseUint(args[1], 8, 32)
		if err != nil {
			return fmt.Errorf("mode %q: %w", args[1], err)
		}
		uid, err := strconv.Atoi(args[2])
		if err != nil {
			return fmt.Errorf("uid %q: %w", args[2], err)
		}
		r.put(args[0], &entry{typ: typeDir, mode: octalMode(mode), uid: uid})
		return nil
	case "file":
		if err := need(2); err != nil {
			return err
		}
		return r.addFile(args[0], host, args[1])
	case "symlink":
		if err := need(2); err != nil {
			return err
		}
		r.put(args[0], &entry{typ: typeSymlink, target: args[1], mode: 0o777})
		return nil
	case "busybox":
		if err := need(2); err != nil {
			return err
		}
		dir := path.Dir(args[0])
		for _, applet := range args[1:] {
			p := path.Join(dir, applet)
			if p != args[0] {
				r.put(p, &entry{typ: typeSymlink, target: path.Base(args[0]), mode: 0o777})
			}
		}
		return nil
	case "bin":
		if err := need(1); err != nil {
			return err
		}
		return r.addBinary(args[0], host)
	case "tree":
		if err := need(1); err != nil {
			return err
		}
		exclude := map[string]bool{}
		if len(args) > 2 && args[1] == "exclude" {
			for _, e := range args[2:] {
				exclude[e] = true
			}
		}
		dirs, err := r.glob(host, args[0])
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if err := r.addTree(d, host, exclude); err != nil {
				return err
			}
		}
		return nil
	case "elfdeps":
		if err := need(1); err != nil {
			return err
		}
		files, err := r.glob(host, args[0])
		if err != nil {
			return err
		}
		for _, p := range files {
			if err := r.addELFDeps(p, host, map[string]bool{}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown directive")
}

func octalMode(m uint64) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// put adds an entry, creating its parent directories (root, 0755) as needed.
func (r *rootfs) put(p string, e *entry) {
	p = path.Clean("/" + p)
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if _, ok := r.entries[d]; !ok {
			r.entries[d] = &entry{typ: typeDir, mode: 0o755}
		}
	}
	r.entries[p] = e
}

func (r *rootfs) glob(host hostFS, pattern string) ([]string, error) {
	matches, err := filepath.Glob(host.path(pattern))
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("nothing on this host matches %s", pattern)
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		rel, err := filepath.Rel(host.path("/"), m)
		if err != nil {
			return nil, err
		}
		out = append(out, "/"+filepath.ToSlash(rel))
	}
	sort.Strings(out)
	return out, nil
}

func (r *rootfs) addEmbedded(dir string) error {
	return fs.WalkDir(manifests, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		dst := "/" + strings.TrimPrefix(p, dir+"/")
		if d.IsDir() {
			r.put(dst, &entry{typ: typeDir, mode: 0o755})
			return nil
		}
		data, err := manifests.ReadFile(p)
		if err != nil {
			return err
		}
		r.put(dst, &entry{typ: typeFile, mode: 0o644, data: data})
		return nil
	})
}

// addFile copies a host file (following symlinks) to dst.
func (r *rootfs) addFile(dst string, host hostFS, src string) error {
	fi, err := os.Stat(host.path(src))
	if err != nil {
		return fmt.Errorf("host file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("host file %s is not a regular file", src)
	}
	r.put(dst, &entry{typ: typeFile, mode: fi.Mode().Perm(), source: host.path(src)})
	return nil
}

// addBinary adds a host executable at its own path, every symlink on the way
// to it, and the shared libraries it loads.
func (r *rootfs) addBinary(p string, host hostFS) error {
	for i := 0; i < 16; i++ {
		fi, err := os.Lstat(host.path(p))
		if err != nil {
			return fmt.Errorf("host binary: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := r.addFile(p, host, p); err != nil {
				return err
			}
			return r.addELFDeps(p, host, map[string]bool{})
		}
		target, err := os.Readlink(host.path(p))
		if err != nil {
			return err
		}
		r.put(p, &entry{typ: typeSymlink, target: target, mode: 0o777})
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		p = target
	}
	return fmt.Errorf("too many symlinks at %s", p)
}

// libDirs are searched, in order, for a library named without a path. They
// are the defaults of glibc's loader on Debian amd64 and arm64.
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
}

// addELFDeps adds the program interpreter and, recursively, the DT_NEEDED
// libraries of the ELF file p; a file that is not ELF has none.
func (r *rootfs) addELFDeps(p string, host hostFS, seen map[string]bool) error {
	if seen[p] {
		return nil
	}
	seen[p] = true
	f, err := elf.Open(host.path(p))
	if err != nil {
		if _, ok := err.(*elf.FormatError); ok {
			return nil
		}
		return fmt.Errorf("reading ELF %s: %w", p, err)
	}
	defer f.Close()
	var deps []string
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return fmt.Errorf("reading interpreter of %s: %w", p, err)
			}
			deps = append(deps, strings.TrimRight(string(b), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading libraries of %s: %w", p, err)
	}
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	rpath, _ := f.DynString(elf.DT_RPATH)
	var search []string
	for _, rp := range append(rpath, runpath...) {
		for _, d := range strings.Split(rp, ":") {
			search = append(search, strings.ReplaceAll(d, "$ORIGIN", path.Dir(p)))
		}
	}
	search = append(search, libDirs...)
	for _, lib := range libs {
		found := ""
		for _, d := range search {
			cand := path.Join(d, lib)
			if _, err := os.Stat(host.path(cand)); err == nil {
				found = cand
				break
			}
		}
		if found == "" {
			return fmt.Errorf("%s needs %s, which is not on this host", p, lib)
		}
		deps = append(deps, found)
	}
	for _, d := range deps {
		if _, ok := r.entries[path.Clean(d)]; !ok {
			if err := r.addFile(d, host, d); err != nil {
				return err
			}
		}
		if err := r.addELFDeps(d, host, seen); err != nil {
			return err
		}
	}
	return nil
}

// addTree copies a host directory tree to the same path, keeping symlinks
// as symlinks and skipping excluded names.
func (r *rootfs) addTree(dir string, host hostFS, exclude map[string]bool) error {
	root := host.path(dir)
	return filepath.WalkDir(root, func(hp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if exclude[d.Name()] && hp != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, hp)
		if err != nil {
			return err
		}
		dst := path.Join(dir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			r.put(dst, &entry{typ: typeDir, mode: info.Mode().Perm()})
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(hp)
			if err != nil {
				return err
			}
			r.put(dst, &entry{typ: typeSymlink, target: t, mode: 0o777})
		case info.Mode().IsRegular():
			r.put(dst, &entry{typ: typeFile, mode: info.Mode().Perm(), source: hp})
		}
		return nil
	})
}
