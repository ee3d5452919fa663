package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Journal tells, between two snapshots of an upper dir, which of its paths
// changed, so that the next snapshot reads those and not the whole layer
// (UpperDir.Update): a layer of 200,000 files costs a walk of seconds, a
// call that changed three of them three stats.
//
// It is an inotify instance with a watch on each directory of the upper
// dir, added by the walks before each directory is read (a child made
// after the watch is told, one made before is listed). The kernel queues
// an event in the syscall that made the change, so what a drain reads
// after a server's answer holds every change made before it. Whatever it
// cannot tell (the kernel's queue overflowed, a directory renamed, more
// paths than a walk would cost, a watch refused) makes the next snapshot a
// full walk, never a partial one: the journal only ever saves work. A
// write through a shared mapping makes no event at all; those files are
// held, and the snapshot verifies held files by content whatever the
// journal says.
type Journal struct {
	mu  sync.Mutex
	fd  int
	buf []byte
	// wds are the watched directories (rel "" is the root); byPath the
	// same the other way.
	wds    map[int32]string
	byPath map[string]int32
	// dirty are the paths changed since the last take, with what the
	// events said of each (dirtyTree, dirtyNamed).
	dirty map[string]uint8
	// full: the journal cannot tell what changed since the last take.
	full bool
	// broken says why the journal is given up for good ("" while it
	// works); the snapshots walk the layer from then on.
	broken     string
	maxWatches int
	maxDirty   int
}

// What the events said of a dirty path.
const (
	// dirtyTree: a directory made or moved there, read whole.
	dirtyTree uint8 = 1 << iota
	// dirtyNamed: the name itself came or went (made, removed, moved).
	// A path written with no such event and gone now was written through
	// a name removed before (a descriptor held, an O_TMPFILE linked
	// elsewhere): the file lives on under another name, which only a
	// walk finds.
	dirtyNamed
)

// DefaultJournalDirs bounds the directories one journal watches: past it
// the journal is given up and every snapshot walks the layer (the kernel's
// watches are shared by every user of the host).
const DefaultJournalDirs = 8192

// journalMask are the events read: everything that changes a path's
// entry, never a read. IN_CLOSE_WRITE is the last release of a file
// opened for writing, its mappings' included: a write that makes no event
// of its own (through a shared mapping, an O_DIRECT write queued by
// io_submit) is either on a file still held at the snapshot, which is
// verified by content, or on one released since, told here.
const journalMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_CLOSE_WRITE | unix.IN_ONLYDIR

// OpenJournal opens a journal of at most maxDirs directories (0:
// DefaultJournalDirs); the walks of the upper dir it is given to
// (UpperDir.Journal) add the watches.
func OpenJournal(maxDirs int) (*Journal, error) {
	if maxDirs <= 0 {
		maxDirs = DefaultJournalDirs
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("opening a change journal: %w", err)
	}
	j := &Journal{fd: fd, buf: make([]byte, 64<<10), wds: map[int32]string{}, byPath: map[string]int32{},
		dirty: map[string]uint8{}, maxWatches: maxDirs, maxDirty: 50_000}
	go j.drain()
	return j, nil
}

// drainPoll is how long the drain waits for events before it looks
// whether the journal was closed.
const drainPoll = 100 // ms

// drain moves the kernel's events into dirty as they come, until the
// journal is closed or given up: the kernel queues at most 16,384 (past
// them the journal could not tell, and the next snapshot would walk),
// whereas dirty holds each path once, however often it changed.
func (j *Journal) drain() {
	for {
		j.mu.Lock()
		fd := j.fd
		j.mu.Unlock()
		if fd < 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, drainPoll)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n > 0 {
			j.mu.Lock()
			if j.fd == fd {
				j.read()
			}
			j.mu.Unlock()
		}
	}
}

// Broken says why the journal was given up ("" while it works).
func (j *Journal) Broken() string {
	if j == nil {
		return "no change journal"
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.broken
}

// Close releases the journal's watches.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fd < 0 {
		return nil
	}
	err := unix.Close(j.fd)
	j.fd = -1
	return err
}

// giveUp ends the journal for good, releasing the kernel's watches.
func (j *Journal) giveUp(why string) {
	if j.broken == "" {
		j.broken = why
	}
	j.full = true
	if j.fd >= 0 {
		unix.Close(j.fd)
		j.fd = -1
	}
	j.wds, j.byPath, j.dirty = nil, nil, nil
}

// watch adds a watch on the directory open as fd, at rel ("" the root),
// before it is read.
func (j *Journal) watch(fd int, rel string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != "" {
		return
	}
	if _, ok := j.byPath[rel]; !ok && len(j.byPath) >= j.maxWatches {
		j.giveUp(fmt.Sprintf("more than %d directories to watch", j.maxWatches))
		return
	}
	wd, err := unix.InotifyAddWatch(j.fd, "/proc/self/fd/"+strconv.Itoa(fd), journalMask)
	if err != nil {
		j.giveUp(fmt.Sprintf("a watch refused at %s: %v", orRoot(rel), err))
		return
	}
	w := int32(wd)
	if old, ok := j.wds[w]; ok && old != rel {
		// The same directory met at another path (renamed): the old path
		// is no longer it.
		delete(j.byPath, old)
	}
	if old, ok := j.byPath[rel]; ok && old != w {
		delete(j.wds, old)
		unix.InotifyRmWatch(j.fd, uint32(old))
	}
	j.wds[w], j.byPath[rel] = rel, w
}

// begin starts a full walk: what changed before it, the walk reads; the
// watches it adds again are kept, those it does not are dropped at end.
func (j *Journal) begin() (seen map[string]bool) {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != "" {
		return nil
	}
	j.read()
	clear(j.dirty)
	j.full = false
	return map[string]bool{}
}

// end ends a full walk that met the directories in met: the watches of
// the others (gone) are removed.
func (j *Journal) end(met map[string]bool) {
	if j == nil || met == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != "" {
		return
	}
	for rel, wd := range j.byPath {
		if !met[rel] {
			delete(j.byPath, rel)
			delete(j.wds, wd)
			unix.InotifyRmWatch(j.fd, uint32(wd))
		}
	}
}

// take drains the kernel's queue and returns the paths changed since the
// last take (true: read the subtree again) and whether the journal could
// not tell (full: walk the layer).
func (j *Journal) take() (dirty map[string]uint8, full bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != "" {
		return nil, true
	}
	j.read()
	dirty, full = j.dirty, j.full
	j.dirty, j.full = map[string]uint8{}, false
	return dirty, full
}

// read moves the events queued in the kernel into dirty (j.mu held).
func (j *Journal) read() {
	for j.fd >= 0 {
		n, err := unix.Read(j.fd, j.buf)
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				j.giveUp(fmt.Sprintf("reading the journal: %v", err))
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&j.buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := j.buf[off+unix.SizeofInotifyEvent : end]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			j.event(ev.Wd, ev.Mask, string(name))
			off = end
		}
	}
}

// event notes one event (j.mu held).
func (j *Journal) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		j.full = true
		return
	}
	if j.dirty == nil {
		return // given up
	}
	dir, ok := j.wds[wd]
	if !ok {
		// A watch dropped (its directory renamed or gone): what is below
		// it is read again where it went, or was removed with it.
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(j.wds, wd)
		if j.byPath[dir] == wd {
			delete(j.byPath, dir)
		}
		return
	}
	p := dir
	if name != "" {
		p = dir + "/" + name
	}
	if p == "" {
		p = "/"
	}
	var flags uint8
	if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		flags |= dirtyNamed
	}
	switch {
	case mask&unix.IN_MOVE_SELF != 0 && name == "":
		// The directory went elsewhere: its watch (and those below) now
		// name paths they are not at. Its parent's event reads it again.
		j.dropBelow(dir)
		return
	case mask&unix.IN_ISDIR != 0 && mask&unix.IN_MOVED_FROM != 0:
		j.dropBelow(p)
	case mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		flags |= dirtyTree
	}
	j.dirty[p] |= flags
	if len(j.dirty) > j.maxDirty {
		// More paths than a walk costs: walk.
		j.full = true
		clear(j.dirty)
	}
}

// dropBelow removes the watches at and below rel (j.mu held).
func (j *Journal) dropBelow(rel string) {
	for p, wd := range j.byPath {
		if p == rel || (len(p) > len(rel) && p[:len(rel)] == rel && p[len(rel)] == '/') || rel == "" {
			delete(j.byPath, p)
			delete(j.wds, wd)
			unix.InotifyRmWatch(j.fd, uint32(wd))
		}
	}
}
