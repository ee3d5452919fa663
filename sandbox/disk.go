package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// DefaultDisk bounds the space the server's writes may hold: the
// container's upper layer, the workspace's and package's changes,
// /dev/shm and the engine's files for the container.
const DefaultDisk = 1 << 30

// DefaultDiskInterval is how often the disk use is measured; a writer
// gets past the bound by what it writes in one interval and one
// measurement (see docs/bounds.md).
const DefaultDiskInterval = 100 * time.Millisecond

// diskTick is how often the cheap signal between measurements is read
// (two statfs), and the shortest interval.
const diskTick = 2 * time.Millisecond

// watchDisk starts measuring the container's disk use (its init is pid on
// the host), from now, before the server starts; a container it cannot
// watch is a disk problem, and the scan goes on.
func (s *Session) watchDisk(ctx context.Context, id string, pid int, targets []string) {
	if s.layer == "" || pid == 0 {
		s.Problem("disk", 0, "the disk bound (--disk) is not watched: the container's layer directory is not readable here (--changes api, or a remote engine)")
		return
	}
	var files []string
	if in, err := s.cli.ContainerInspect(ctx, id); err == nil && in.ContainerJSONBase != nil {
		files = []string{in.HostsPath, in.HostnamePath, in.ResolvConfPath}
	}
	w, err := newDiskWatch(pid, s.opts.Disk, s.opts.DiskInterval, []string{s.layer}, files, append([]string{"/"}, targets...))
	if err != nil {
		s.Problem("disk", 0, "the disk bound (--disk) is not watched: %s", report.OneLine(err.Error()))
		return
	}
	s.disk = w
	w.start()
}

// DiskStopped says whether the runner stopped the server at the disk bound.
func (s *Session) DiskStopped() bool { return s.diskStopped || (s.disk != nil && s.disk.stopped()) }

// DiskBound is the disk bound the session runs under (--disk, or the
// default): what a driver's message about the stop quotes.
func (s *Session) DiskBound() int64 { return s.opts.Disk }

// finishDisk takes the last measurement, once the server is stopped, and
// records what the watch saw.
func (s *Session) finishDisk(deadline time.Time) {
	if s.disk == nil {
		return
	}
	// Past the run's deadline there is no last measurement: a walk of a
	// large layer takes seconds, and the run is incomplete already
	// (run-timeout); it is said, not skipped silently.
	past := !deadline.IsZero() && !time.Now().Before(deadline)
	r := s.disk.finish(!past)
	s.disk = nil
	if past {
		s.Problem("disk", 0, "the disk use was not measured a last time: past --timeout (the most used until then is under timing)")
	}
	s.diskStopped = s.diskStopped || r.Exceeded
	s.logf("disk: %d measurement(s), the longest %s; the most used %d bytes (bound %d)", r.Polls, r.Cost, r.Peak, s.opts.Disk)
	if s.rep.Timing == nil {
		s.rep.Timing = &report.Timing{}
	}
	s.rep.Timing.DiskPeakBytes = max(s.rep.Timing.DiskPeakBytes, r.Peak)
	if r.Err != nil {
		s.Problem("disk", 0, "measuring the disk use: %s", report.OneLine(r.Err.Error()))
	}
	if !r.Exceeded {
		return
	}
	s.rep.Sandbox.DiskExceeded = true
	for _, p := range s.rep.Problems {
		if p.Kind == "disk" && p.Call > 0 {
			return // said where it happened
		}
	}
	s.Problem("disk", 0, "%s", DiskMessage(s.opts.Disk))
}

// DiskMessage says that the bound was passed (the measured figures vary
// from run to run: they are under timing).
func DiskMessage(bound int64) string {
	return fmt.Sprintf("the server's writes passed the disk bound of %d bytes (--disk): it was stopped, and what it did after was not seen", bound)
}
