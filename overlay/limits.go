package overlay

// Limits bound the work and memory of a snapshot.
type Limits struct {
	// MaxEntries stops the walk of the upper dir (default 200,000).
	MaxEntries int
	// MaxHashBytes is the largest regular file hashed (default 16 MiB).
	MaxHashBytes int64
	// First are the subtrees walked before anything else (default
	// DefaultFirst), so that a bound hit elsewhere leaves them compared.
	First []string
}

// DefaultFirst are the places a hostile server most wants unseen: the
// workspace (the canaries), the home directories (the honeytokens, the
// shell start-up and credential files).
var DefaultFirst = []string{Workspace, "/home", "/root"}

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
	return l
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

	hashes map[string]hashed // content hashes of upper files, by path
	lower  map[string]*Entry // lower lookups, by path (nil: not there)
}
