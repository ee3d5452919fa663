package overlay

import (
	"errors"
	"path"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// A run's workspace is a host directory mounted copy-on-write: the
// server's writes land in the mount's upper dir, never on the host.
// Changes lists them against the host; Apply writes the ones the user
// picks into the host directory, as its owner, refusing what is unsafe.

// FileID is the identity of one host file when a run started: what tells
// a file left alone from one edited since. ctime cannot be set by a user,
// so a file written, renamed over or chmod'ed since shows, whatever its
// mtime says.
type FileID struct {
	Type    Type   `json:"type"`
	Mode    uint32 `json:"mode"` // permission and set-id bits
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtimeNs"`
	CtimeNs int64  `json:"ctimeNs"`
	Ino     uint64 `json:"ino"`
	Dev     uint64 `json:"dev"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	// SHA256 is the content's hash, for regular files within the
	// baseline's hash budget ("" past it: compared by identity only).
	SHA256 string `json:"sha256,omitempty"`
}

// same says whether cur is still the file id was: same inode, size, times
// and type. A directory is the same directory by its inode; what is in it
// is looked at entry by entry.
func (id FileID) same(cur FileID) bool {
	if id.Type != cur.Type || id.Ino != cur.Ino || id.Dev != cur.Dev {
		return false
	}
	if id.Type == Dir {
		return true
	}
	return id.Size == cur.Size && id.MtimeNs == cur.MtimeNs && id.CtimeNs == cur.CtimeNs && id.Mode == cur.Mode
}

// Baseline is the identity of every path of a host directory when a run
// started, by its slash-separated path relative to the directory ("" is
// the directory itself).
type Baseline struct {
	Files map[string]FileID `json:"files"`
	// Truncated is set when the walk stopped at MaxFiles: a path past it
	// has no identity, and Apply refuses to change it.
	Truncated bool `json:"truncated,omitempty"`
}

// BaselineOptions bound taking a baseline.
type BaselineOptions struct {
	// MaxFiles bounds the paths recorded (default DefaultBaselineFiles).
	MaxFiles int
	// HashBudget bounds the bytes hashed (default DefaultBaselineHash);
	// files past it are compared by identity only.
	HashBudget int64
}

// Defaults of BaselineOptions.
const (
	DefaultBaselineFiles       = 1_000_000
	DefaultBaselineHash  int64 = 64 << 20
)

// Refusal is why Apply will not write a change.
type Refusal int

const (
	// RefuseHostChanged: the host copy changed since the run started (or
	// appeared, for a path the run created).
	RefuseHostChanged Refusal = iota + 1
	// RefuseSymlink: the change is a symbolic link.
	RefuseSymlink
	// RefuseSpecial: a device, fifo or socket.
	RefuseSpecial
	// RefuseSetID: a file with the setuid, setgid or sticky bit.
	RefuseSetID
	// RefuseEscapes: the path leaves the directory (.., absolute, a
	// parent on the host that is a symlink or not a directory).
	RefuseEscapes
	// RefusePlanted: the runner planted the path (a canary, a probe).
	RefusePlanted
	// RefuseNoBaseline: the path was past the baseline's bound, so
	// whether the host copy changed cannot be told.
	RefuseNoBaseline
	// RefuseOverlay: an overlayfs entry whose data is elsewhere (a
	// redirected directory, a metacopy file).
	RefuseOverlay
	// RefuseUnknown: the path asked for is not among the run's changes.
	RefuseUnknown
	// RefuseExec: a file given an executable bit it did not have; held
	// back unless named or allowed (ApplyOptions.AllowExec).
	RefuseExec
	// RefuseRunsCode: a file in a place that runs code on the host (see
	// CodePlaces); held back as RefuseExec.
	RefuseRunsCode
	// RefuseMode: a file or directory made world-writable.
	RefuseMode
	// RefuseApplyBound: the apply would write more than its bound
	// (ApplyOptions.MaxBytes): nothing is written.
	RefuseApplyBound
)

var refusalNames = []string{RefuseHostChanged: "host-changed", RefuseSymlink: "symlink", RefuseSpecial: "special-file",
	RefuseSetID: "set-id", RefuseEscapes: "escapes", RefusePlanted: "planted", RefuseNoBaseline: "no-baseline",
	RefuseOverlay: "overlay-entry", RefuseUnknown: "not-changed", RefuseExec: "exec", RefuseRunsCode: "runs-code",
	RefuseMode: "mode", RefuseApplyBound: "apply-bound"}

// HeldBack says whether the refusal gives way when the path is named or
// code is allowed (--allow-exec).
func (r Refusal) HeldBack() bool { return r == RefuseExec || r == RefuseRunsCode }

func (r Refusal) String() string {
	if r <= 0 || int(r) >= len(refusalNames) {
		return "refusal(?)"
	}
	return refusalNames[r]
}

// MarshalText writes the refusal's name.
func (r Refusal) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// ErrRefused is wrapped by the error of every refused change.
var ErrRefused = errors.New("refused")

// RefusedError is one change Apply would not write, and why.
type RefusedError struct {
	Path   string
	Reason Refusal
	Detail string
}

func (e *RefusedError) Error() string {
	p, _ := EscapePath(e.Path)
	what := "refused "
	if e.Reason.HeldBack() {
		what = "held back "
	}
	return what + p + ": " + e.Reason.String() + ": " + e.Detail
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// WorkspaceChange is one path a run changed in a host directory.
type WorkspaceChange struct {
	// Path is relative to the directory, slash-separated.
	Path   string            `json:"path"`
	Change report.ChangeKind `json:"change"`
	Type   Type              `json:"type"`
	// Was is the type on the host, when a path changed type.
	Was  Type   `json:"was,omitempty"`
	Mode uint32 `json:"mode,omitempty"`
	// ModeBefore is the host's mode, for a modified path.
	ModeBefore uint32 `json:"modeBefore,omitempty"`
	// Size is a file's apparent size, Allocated what it holds (less for a
	// sparse file: Apply writes it sparse).
	Size      int64 `json:"size,omitempty"`
	Allocated int64 `json:"allocated,omitempty"`
	// LinkTarget is a symbolic link's target (never applied).
	LinkTarget string `json:"linkTarget,omitempty"`
	// Diff is the unified diff of a text file (created, modified or
	// deleted) within the diff bound; Binary marks one that is not text.
	Diff   string `json:"diff,omitempty"`
	Binary bool   `json:"binary,omitempty"`
	// DiffOmitted says why a text diff is not given (over the bound).
	DiffOmitted string `json:"diffOmitted,omitempty"`
	// Refused, when set, is why Apply will not write it (as of now).
	Refused *RefusedError `json:"refused,omitempty"`
	// scripts: a package.json whose scripts changed (or may have).
	scripts bool
}

// NewExec says whether the change gives a file an executable bit the
// host copy did not have.
func (c WorkspaceChange) NewExec() bool {
	if c.Type != File || c.Change == report.ChangeDeleted {
		return false
	}
	before := uint32(0)
	if c.Change == report.ChangeModified && c.Was == "" {
		before = c.ModeBefore
	}
	return c.Mode&0o111&^before != 0
}

// ApplyOptions names a run's workspace.
type ApplyOptions struct {
	// Host is the host directory; Upper the overlay upper dir of the run's
	// mount of it.
	Host, Upper string
	// Baseline is the host directory's identity when the run started.
	Baseline Baseline
	// Planted are paths (relative, slash-separated) the runner put in the
	// workspace: never applied, nor anything under them.
	Planted []string
	// MaxDiffBytes bounds the size of a file shown as a diff (default
	// DefaultMaxDiffBytes).
	MaxDiffBytes int64
	// AllowExec writes what would be held back (RefuseExec,
	// RefuseRunsCode) without the paths being named.
	AllowExec bool
	// MaxBytes bounds the apparent bytes of the files one apply writes,
	// checked before anything is written (0: DefaultApplyBound of the
	// host directory's file system; negative: none).
	MaxBytes int64
}

// ApplyBoundCap caps the default apply bound: the smaller of 1 GiB and a
// tenth of the free space.
const ApplyBoundCap int64 = 1 << 30

// DefaultMaxDiffBytes bounds the files Changes shows a diff of.
const DefaultMaxDiffBytes int64 = 1 << 20

// ApplyResult says what Apply did.
type ApplyResult struct {
	Applied []WorkspaceChange
	Refused []*RefusedError
}

// cleanRel checks a path a user gave: relative, inside the directory, no
// "..", returned slash-separated and clean ("" for the directory).
func cleanRel(p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return "", false
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", false
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", true
	}
	return c, true
}

// underRel says whether p is dir or below it ("" is the root, above all).
func underRel(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
