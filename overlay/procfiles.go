package overlay

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A process can change a file's bytes without changing its stat: writes
// through a shared mapping whose pages are already dirty fault no more, so
// the kernel updates neither mtime nor ctime until writeback. The files a
// process holds that way (mapped shared, or open for writing) are read
// from /proc/PID/maps and /proc/PID/fdinfo; this file parses them.

// Mapping is one line of /proc/PID/maps that maps a file shared.
type Mapping struct {
	Start, End uint64 // the address range, as in /proc/PID/map_files/START-END
	Perms      string // "rw-s"
	Major      uint32
	Minor      uint32
	Inode      uint64
	// Path is as maps prints it: newlines escaped as \012, a deleted
	// file's name followed by " (deleted)". Read the name from
	// map_files, not from here.
	Path string
}

// Writable says whether the mapping is writable now. A shared mapping
// that is not can be made so with mprotect if its file was opened for
// writing, so every shared file mapping is held, writable or not.
func (m Mapping) Writable() bool { return len(m.Perms) == 4 && m.Perms[1] == 'w' }

// MapFilesName is the mapping's entry in /proc/PID/map_files.
func (m Mapping) MapFilesName() string { return fmt.Sprintf("%x-%x", m.Start, m.End) }

// maxMapsLine bounds one line of maps (the path is at most PATH_MAX
// bytes, escaped); a longer line is an error, never a silent skip.
const maxMapsLine = 64 << 10

// ParseSharedMappings returns the shared mappings of files (the perms'
// fourth letter 's', an inode that is not 0) in a /proc/PID/maps text.
// Private mappings, anonymous shared memory (inode 0) and the kernel's
// special areas are left out.
func ParseSharedMappings(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxMapsLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		// address perms offset dev inode [path]; the path may hold spaces.
		f := strings.SplitN(line, " ", 6)
		if len(f) < 5 {
			return nil, fmt.Errorf("maps line %d: %q: too few fields", n, line)
		}
		perms := f[1]
		if len(perms) != 4 || perms[3] != 's' {
			continue
		}
		var m Mapping
		var err error
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("maps line %d: address %q", n, f[0])
		}
		if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: address %q: %w", n, f[0], err)
		}
		if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: address %q: %w", n, f[0], err)
		}
		maj, min, ok := strings.Cut(f[3], ":")
		if !ok {
			return nil, fmt.Errorf("maps line %d: device %q", n, f[3])
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("maps line %d: device %q", n, f[3])
		}
		m.Major, m.Minor = uint32(ma), uint32(mi)
		if m.Inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: inode %q: %w", n, f[4], err)
		}
		if m.Inode == 0 {
			continue // anonymous shared memory, no file
		}
		m.Perms = perms
		if len(f) == 6 {
			m.Path = strings.TrimLeft(f[5], " ")
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading maps: %w", err)
	}
	return out, nil
}

// Access modes of fdinfo's flags (octal in the file), as open(2) has them.
const (
	accMode   = 0o3
	wrOnly    = 0o1
	readWrite = 0o2
)

// ParseFdinfoWritable reads /proc/PID/fdinfo/N and says whether the
// descriptor was opened for writing (O_WRONLY or O_RDWR).
func ParseFdinfoWritable(r io.Reader) (bool, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		if err != nil {
			return false, fmt.Errorf("fdinfo flags %q: %w", v, err)
		}
		m := flags & accMode
		return m == wrOnly || m == readWrite, nil
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading fdinfo: %w", err)
	}
	return false, fmt.Errorf("fdinfo has no flags line")
}
