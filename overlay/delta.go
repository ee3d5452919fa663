package overlay

import (
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Kind says how a path differs from the image (the lower layers).
type Kind int

const (
	// Added paths are not in the image.
	Added Kind = iota
	// Changed paths are in the image and were written (copied up).
	Changed
	// Removed paths are in the image and were deleted (a whiteout, or hidden
	// by an opaque directory).
	Removed
)

// Type is a path's file type, as reported.
type Type string

const (
	File    Type = "file"
	Dir     Type = "dir"
	Symlink Type = "symlink"
	Other   Type = "other"
)

// TypeOf maps a file mode to a Type.
func TypeOf(m fs.FileMode) Type {
	switch {
	case m.IsRegular():
		return File
	case m.IsDir():
		return Dir
	case m&fs.ModeSymlink != 0:
		return Symlink
	}
	return Other
}

// Entry is the state of one changed path in a snapshot.
type Entry struct {
	Kind    Kind
	Type    Type
	Mode    fs.FileMode
	UID     int
	GID     int
	Size    int64
	ModTime int64 // nanoseconds
	// Ctime catches a rewrite whose mtime was put back (upper dir only).
	Ctime int64
	// SHA256 is the content hash of a regular file up to the size bound;
	// PrefixSHA256 the hash of its first bytes, as many as it had when last
	// seen (see Change.Appended).
	SHA256       string
	PrefixSHA256 string
	Link         string // symlink target
	// Unhashed marks a regular file whose content the snapshot's hash
	// budget did not cover: its SHA256 is empty and says nothing.
	Unhashed bool
	// Digest is the content hash of a file over the size bound, read
	// because a process held it: compared, never reported.
	Digest string
	// Before is the path's state in the image, when it is there.
	Before *Entry
	// Opaque marks a directory whose image contents were all removed (the
	// directory was deleted and made again).
	Opaque bool
	// lines are the hashes of a text file's lines (nil: not text, over
	// the line bound, or not read; see keepsLines).
	lines *lineSet
}

// same reports whether two entries show the same state; a directory's
// times and size follow its children and are left out.
func same(a, b Entry) bool {
	if a.Kind != b.Kind || a.Type != b.Type || a.Mode != b.Mode || a.UID != b.UID || a.GID != b.GID || a.Opaque != b.Opaque {
		return false
	}
	if a.Type == Dir {
		return true
	}
	// A side not hashed (over the budget) compares by stat alone; the
	// snapshot that left it unhashed said so.
	sum := a.Unhashed || b.Unhashed || a.SHA256 == b.SHA256
	digest := a.Digest == "" || b.Digest == "" || a.Digest == b.Digest
	// The ctime moves with any change to the inode, a chmod to the mode
	// it had included: where both contents are known by hash, the hashes
	// tell a rewrite whose mtime was put back, and the ctime adds nothing.
	ctime := a.Ctime == b.Ctime || sameContent(a, b)
	return a.Size == b.Size && a.ModTime == b.ModTime && ctime && sum && digest && a.Link == b.Link
}

// sameContent reports whether two file entries are both hashed to the
// same content.
func sameContent(a, b Entry) bool {
	return a.Type == File && b.Type == File && !a.Unhashed && !b.Unhashed && a.SHA256 != "" && a.SHA256 == b.SHA256
}

// unchangedCopy reports whether e, a file of the image seen in the upper
// dir for the first time, is still what the image had: copied up by a
// call that changed nothing (a chmod to the mode it had, an open for
// writing that wrote nothing). Copy-up keeps the mtime, owner and mode;
// only the ctime is new.
func unchangedCopy(e Entry) bool {
	b := e.Before
	return e.Kind == Changed && b != nil && !metaDiffers(*b, e) && b.Size == e.Size && b.ModTime == e.ModTime && sameContent(*b, e)
}

// Snapshot is every changed path at one moment, bounded.
type Snapshot struct {
	Entries map[string]Entry
	// Truncated is set when the walk stopped at the entry bound, or at
	// the deadline (PastDeadline); Count and Bytes then still count what
	// was seen.
	Truncated bool
	// PastDeadline is set when the walk stopped because the run's
	// deadline (the hash budget's) had passed: the paths it did not reach
	// are not compared, as past the entry bound.
	PastDeadline bool
	Count        int
	Bytes        int64
	// Unhashed lists, sorted, the regular files whose content the hash
	// budget did not cover (changed ones, and held ones to verify).
	Unhashed []string
	// Covers, in a truncated snapshot, tells the paths the walk reached
	// before it stopped (nil: none is known to be): only there is a path's
	// absence news, a deletion, or its presence a creation.
	Covers func(p string) bool
}

// Reached reports whether the walk of s reached p.
func (s Snapshot) Reached(p string) bool {
	return !s.Truncated || (s.Covers != nil && s.Covers(p))
}

// Change is one effect: a path created, modified or deleted in a phase.
type Change struct {
	// Path is the path in the container; PathEscaped tells that it held
	// bytes that are not printable UTF-8, which are escaped as \xNN, \n...
	Path         string
	PathEscaped  bool
	Change       report.ChangeKind
	Type         Type
	Scope        string // workspace, outside
	Area         string // for outside: tmp, home, system, shm, ipc, other
	Size         int64
	Mode         fs.FileMode
	SHA256       string
	SHA256Before string
	Link         string
	// Appended is set on a modified file whose earlier bytes are unchanged:
	// it only grew.
	Appended bool
	// LinesKept is set on a modified text file, not Appended, whose new
	// content holds every old line in order (see keepsLines).
	LinesKept bool
	// ContentKept is set on a modified JSON or JSON-lines file, not
	// LinesKept, whose new values hold every old one (see content.go).
	ContentKept bool
}

// Workspace is the path the server sees its workspace at.
const Workspace = "/workspace"

// Delta returns the changes from prev to cur, sorted by path. A directory
// whose only change is a changed child is not reported.
func Delta(prev, cur Snapshot) []Change {
	var out []Change
	DeltaEach(prev, cur, func(c Change) bool {
		out = append(out, c)
		return true
	})
	return out
}

// DeltaEach gives fn the changes Delta returns, in the same order, one at
// a time, until fn returns false, without keeping them: what it holds is
// the sorted paths of the two snapshots, not a Change for each (a flood
// of 200,000 new files is 200,000 changes, of which a report lists a
// thousand).
func DeltaEach(prev, cur Snapshot, fn func(Change) bool) {
	type key struct{ esc, raw string }
	keys := make([]key, 0, len(cur.Entries))
	for p, e := range cur.Entries {
		o, had := prev.Entries[p]
		if had && same(o, e) {
			continue
		}
		if !had && !prev.Reached(p) {
			continue // past the last walk's bound: not new, not known to be
		}
		esc, _ := EscapePath(p)
		keys = append(keys, key{esc, p})
	}
	for p, o := range prev.Entries {
		if _, ok := cur.Entries[p]; ok || o.Kind == Removed || !cur.Reached(p) {
			continue
		}
		esc, _ := EscapePath(p)
		keys = append(keys, key{esc, p})
	}
	// By the path as reported; two paths that read the same escaped (a
	// backslash and an escaped byte) by the path itself.
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.esc, b.esc); c != 0 {
			return c
		}
		return strings.Compare(a.raw, b.raw)
	})
	var buf [2]Change
	for _, k := range keys {
		for _, c := range pathChanges(prev, cur, k.raw, buf[:0]) {
			if !fn(c) {
				return
			}
		}
	}
}

// pathChanges appends to out the changes of p from prev to cur: none, one,
// or a deletion then a creation (a path replaced).
func pathChanges(prev, cur Snapshot, p string, out []Change) []Change {
	e, now := cur.Entries[p]
	o, had := prev.Entries[p]
	if !now {
		// Gone: unless its directory went with it, and is reported.
		if _, ok := prev.Entries[path.Dir(p)]; ok {
			if _, still := cur.Entries[path.Dir(p)]; !still {
				return out
			}
		}
		return append(out, change(p, report.ChangeDeleted, &o, o))
	}
	if e.Opaque && (!had || !o.Opaque) {
		// Deleted and made again: everything the image had below it is gone.
		return append(out, change(p, report.ChangeDeleted, e.Before, e), change(p, report.ChangeCreated, &e, e))
	}
	if e.Kind != Removed && ((had && o.Kind != Removed && o.Type != e.Type) || (!had && e.Before != nil && e.Before.Type != e.Type)) {
		// Replaced by something of another type (a file by a symlink, a
		// directory by a file): the old one is gone.
		old := o
		if !had {
			old = *e.Before
		}
		return append(out, change(p, report.ChangeDeleted, &old, old), change(p, report.ChangeCreated, &e, e))
	}
	var c report.ChangeKind
	switch {
	case e.Kind == Removed:
		c = report.ChangeDeleted
	case had && o.Kind == Removed, !had && e.Kind == Added:
		c = report.ChangeCreated
	case e.Type == Dir && !had && e.Before != nil && !metaDiffers(*e.Before, e):
		return out // copied up only because a child changed
	case !had && unchangedCopy(e):
		return out // copied up, nothing changed
	default:
		c = report.ChangeModified
	}
	ch := change(p, c, &e, e)
	if c == report.ChangeModified && e.Type == File && e.PrefixSHA256 != "" {
		switch {
		case had && o.Type == File:
			ch.Appended = o.SHA256 != "" && e.PrefixSHA256 == o.SHA256
		case !had && e.Before != nil:
			ch.Appended = e.Before.SHA256 != "" && e.PrefixSHA256 == e.Before.SHA256
		}
	}
	if c == report.ChangeModified && e.Type == File && !ch.Appended {
		switch {
		case had && o.Type == File:
			ch.LinesKept = keepsLines(o.lines, e.lines)
			ch.ContentKept = !ch.LinesKept && keepsContent(o.lines, e.lines)
		case !had && e.Before != nil:
			ch.LinesKept = keepsLines(e.Before.lines, e.lines)
			ch.ContentKept = !ch.LinesKept && keepsContent(e.Before.lines, e.lines)
		}
	}
	return append(out, ch)
}

func metaDiffers(a, b Entry) bool { return a.Mode != b.Mode || a.UID != b.UID || a.GID != b.GID }

func change(p string, kind report.ChangeKind, state *Entry, e Entry) Change {
	esc, escaped := EscapePath(p)
	c := Change{Path: esc, PathEscaped: escaped, Change: kind, Scope: Scope(p), Area: Area(p)}
	if state == nil {
		state = &Entry{Type: Dir}
	}
	c.Type = state.Type
	if kind != report.ChangeDeleted {
		c.Size, c.Mode, c.SHA256, c.Link = e.Size, e.Mode, e.SHA256, e.Link
	}
	if e.Before != nil {
		if kind == report.ChangeDeleted {
			c.Type = e.Before.Type
		}
		c.SHA256Before = e.Before.SHA256
	} else if kind == report.ChangeDeleted && state.SHA256 != "" {
		c.SHA256Before = state.SHA256 // made and deleted during the run
	}
	return c
}

// Scope says whether a container path is in the workspace.
func Scope(p string) string {
	if p == Workspace || strings.HasPrefix(p, Workspace+"/") {
		return "workspace"
	}
	return "outside"
}

// Area is a coarse grouping of paths outside the workspace.
func Area(p string) string {
	if Scope(p) == "workspace" {
		return ""
	}
	first := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
	switch {
	case under(p, ShmDir):
		return "shm"
	case under(p, MqueueDir), under(p, SysvIPCDir):
		return "ipc"
	case first == "tmp", under(p, "/var/tmp"):
		return "tmp"
	case first == "home", first == "root":
		return "home"
	case first == "etc", first == "usr", first == "bin", first == "sbin", first == "opt", first == "var", first == "boot", strings.HasPrefix(first, "lib"):
		return "system"
	}
	return "other"
}

// Writable places of a container that are not its overlay, where the
// server's effects are read by other means than the upper dir (see Tree).
const (
	// ShmDir is the container's own tmpfs for shared memory (shm_open,
	// POSIX semaphores, browsers' shared buffers).
	ShmDir = "/dev/shm"
	// MqueueDir is the mqueue filesystem of the container's IPC namespace:
	// one file per POSIX message queue (mq_open).
	MqueueDir = "/dev/mqueue"
	// SysvIPCDir names System V IPC objects, as /proc/sysvipc lists them:
	// SysvIPCDir/shm/ID, SysvIPCDir/msg/ID, SysvIPCDir/sem/ID.
	SysvIPCDir = "/proc/sysvipc"
)

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// EscapePath makes a path safe to print and to put in JSON without loss:
// invalid UTF-8 and control characters are escaped as Go does in string
// literals (a backslash is doubled only when something else is escaped,
// so ordinary paths stay as they are).
func EscapePath(p string) (string, bool) {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) {
		return p, false
	}
	q := strconv.QuoteToGraphic(p)
	return q[1 : len(q)-1], true
}
