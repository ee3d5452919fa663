package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// epoch is every entry's modification time, so that the same inputs give
// the same bytes.
var epoch = time.Unix(0, 0).UTC()

// writeTar writes the root filesystem as a tar stream, entries sorted by
// path, with fixed times, and returns the sha256 of the stream.
func (r *rootfs) writeTar(w io.Writer) (string, error) {
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(w, h))
	paths := make([]string, 0, len(r.entries))
	for p := range r.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		e := r.entries[p]
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    int64(e.mode.Perm()),
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if e.mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		switch e.typ {
		case typeDir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case typeSymlink:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.target
		case typeFile:
			hdr.Typeflag = tar.TypeReg
			if err := writeFile(tw, hdr, e); err != nil {
				return "", fmt.Errorf("adding %s: %w", p, err)
			}
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", fmt.Errorf("writing tar header for %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("closing tar: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeFile writes a regular file's header and content.
func writeFile(tw *tar.Writer, hdr *tar.Header, e *entry) error {
	if e.source == "" {
		hdr.Size = int64(len(e.data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	f, err := os.Open(e.source)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("%s changed size while it was read", e.source)
	}
	return nil
}
