package overlay

// Tree reads snapshots of a plain directory that is no overlay: a tmpfs
// such as a container's /dev/shm, an mqueue mount. Everything in it is an
// entry (Kind Added); what changed is what differs between two snapshots,
// so the first one taken is the baseline.
//
// Files are hashed at every snapshot, whatever their stat says: a write
// through a shared mapping of a tmpfs file changes no time, and mapping is
// what shared memory is for. The walk and the hashing never follow a link
// (see UpperDir).
type Tree struct {
	// Root is the directory, opened without following a link in its last
	// component ("/proc/self/fd/N/." reaches one held open).
	Root string
	// At is the container path Root is seen at; entries are At + "/name".
	At     string
	Limits Limits
	// OneFS leaves out what is mounted below Root (a directory on another
	// device is listed, its contents are not).
	OneFS bool
	// MaxHashTotal bounds the bytes hashed in one snapshot (default
	// TreeHashBudget): sparse files cost nothing to make and their size in
	// reading. Past it files are listed without a hash and the snapshot
	// is marked truncated.
	MaxHashTotal int64
}

// TreeHashBudget is the default bound on the bytes a Tree hashes per
// snapshot: four times the engine's default /dev/shm size.
const TreeHashBudget = 256 << 20

// WithDefaults fills in the default of every bound left at zero.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }
