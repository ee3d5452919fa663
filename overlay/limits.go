package overlay

import (
	"hash/maphash"
	"time"
)

// Limits bound the work and memory of a snapshot.
type Limits struct {
	// MaxEntries stops the walk of the upper dir (default 200,000).
	MaxEntries int
	// MaxHashBytes is the largest regular file hashed (default 16 MiB).
	MaxHashBytes int64
	// First are the subtrees walked before anything else (default
	// DefaultFirst), so that a bound hit elsewhere leaves them compared.
	First []string
	// HashBudget bounds the bytes one snapshot reads to hash files
	// (default DefaultHashBudget): a server that keeps many large files
	// open for writing makes each of them hashed at every snapshot.
	HashBudget int64
	// LineBound is the largest text file whose line hashes are kept, to
	// tell a rewrite that keeps every old line (default
	// DefaultLineBound); MaxLines bounds the line hashes kept at once
	// (default DefaultMaxLines).
	LineBound int64
	MaxLines  int
	// MaxPathBytes stops the walk once the paths it met add up to it
	// (default DefaultMaxPathBytes), as MaxEntries does: a chain of
	// directories n deep costs n entries and n² bytes of paths.
	MaxPathBytes int
	// JournalDirs bounds the directories a change journal watches
	// (default DefaultJournalDirs; see Journal): past it every snapshot
	// walks.
	JournalDirs int
}

// DefaultMaxPathBytes bounds the bytes of the paths one snapshot holds:
// 200,000 entries of 160 bytes each.
const DefaultMaxPathBytes = 32 << 20

// DefaultFirst are the places a hostile server most wants unseen: the
// workspace (the canaries), the home directories (the honeytokens, the
// shell start-up and credential files).
var DefaultFirst = []string{Workspace, "/home", "/root"}

// DefaultHashBudget is the bytes a snapshot hashes at most, by default:
// about half a second of sha256 on a core with the SHA extensions.
const DefaultHashBudget = 512 << 20

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = 200_000
	}
	if l.MaxHashBytes <= 0 {
		l.MaxHashBytes = 16 << 20
	}
	if l.First == nil {
		l.First = DefaultFirst
	}
	if l.HashBudget <= 0 {
		l.HashBudget = DefaultHashBudget
	}
	if l.LineBound <= 0 {
		l.LineBound = DefaultLineBound
	}
	if l.MaxLines <= 0 {
		l.MaxLines = DefaultMaxLines
	}
	if l.MaxPathBytes <= 0 {
		l.MaxPathBytes = DefaultMaxPathBytes
	}
	return l
}

// Budget is what one snapshot may still read to hash files: bytes, and a
// deadline (the run's), past which nothing more is hashed. Files that do
// not fit are not hashed, and the snapshot lists them (Unhashed): their
// content is never taken as unchanged. Files are taken in walk order
// (sorted), so the same changes exhaust the same budget the same way.
type Budget struct {
	left     int64
	deadline time.Time
	spent    int64
}

// NewBudget gives a snapshot bytes to hash until deadline (zero: none).
func NewBudget(bytes int64, deadline time.Time) *Budget {
	return &Budget{left: bytes, deadline: deadline}
}

// Take reserves n bytes; false when they do not fit or the deadline has
// passed.
func (b *Budget) Take(n int64) bool {
	if Passed(b.deadline) {
		return false
	}
	if n > b.left {
		return false
	}
	b.left -= n
	b.spent += n
	return true
}

// Deadline is when the budget ends (zero: never), for the readers that
// keep a byte budget of their own (a Tree, System V IPC) but stop at the
// run's deadline all the same.
func (b *Budget) Deadline() time.Time {
	if b == nil {
		return time.Time{}
	}
	return b.deadline
}

// Passed says whether deadline (zero: none) has passed.
func Passed(deadline time.Time) bool {
	return !deadline.IsZero() && !now().Before(deadline)
}

// now is the clock the deadlines are read on (a test's own, to stop a
// walk at a given entry).
var now = time.Now

// deadlineEvery is how many entries a walk meets between two looks at the
// deadline.
const deadlineEvery = 64

// Spent is how many bytes were taken.
func (b *Budget) Spent() int64 { return b.spent }

// SnapshotOptions say which files a snapshot compares by content whatever
// their stat says, and what it may spend doing it.
type SnapshotOptions struct {
	// Verify holds paths (as the snapshot names them) whose content is
	// hashed again even when inode, size and times are unchanged: files a
	// process holds open for writing or maps shared. VerifyAll does so for
	// every regular file (a held file could not be placed).
	Verify    map[string]bool
	VerifyAll bool
	// Budget, if set, is shared with other snapshots of the same moment
	// (the root's and a mount's); nil gives one of Limits.HashBudget.
	Budget *Budget
}

// UpperDir reads snapshots from an overlayfs upper dir, telling created
// from modified by looking paths up in the lower dirs (top first).
//
// It never follows a link: the walk uses lstat, lower lookups go one
// component at a time with lstat, and files are opened for hashing with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) under the layer's root, so a
// server that plants /workspace/x -> /etc/shadow cannot make the runner read
// a host file.
type UpperDir struct {
	Upper  string
	Lowers []string
	Limits Limits
	// Journal, if set, tells the paths changed since the last snapshot,
	// so that Update reads only those (see Journal).
	Journal *Journal

	hashes map[string]hashed // content hashes of upper files, by path
	lower  map[string]*Entry // lower lookups, by path (nil: not there)
	// seed keys the line hashes; lineCount counts those kept.
	seed      maphash.Seed
	lineCount int
	// live is the state Update starts from: the last snapshot's, kept up
	// to date (nil: the next snapshot walks).
	live *liveState
}

// liveState is the upper dir as the last snapshot left it, kept up to
// date by Update.
type liveState struct {
	entries map[string]Entry
	// links are the names of each multiply-linked inode: a write through
	// one name is told at another (overlayfs writes through the name it
	// copied up).
	links map[uint64][]string
	inoOf map[string]uint64
	// unhashed are the files no snapshot could hash yet, tried again.
	unhashed  map[string]bool
	pathBytes int
	bytes     int64
}
