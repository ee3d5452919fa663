//go:build linux && amd64

package agent

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A pinner keeps the traced tasks on the tracing thread's CPU while they
// stop often (Config.Pin), and lets them go again once they stop rarely.
//
// Each ptrace stop is a switch from the task to the tracer and back. On
// one CPU that is a plain context switch; across two it is a wake-up sent
// to the other CPU each way, which on a VM is an exit to the hypervisor:
// 1,000 execs of /bin/true from a Go parent, five stops each, cost 1.40x
// the untraced time with the tasks free and 1.20x with them on the
// tracer's CPU (docs/measurements.md, Benchmarks). Pinned for good, a server loses its
// second CPU for work that never stops (1.08x instead of 1.03x on the
// benchmark's file workload, whose Go runtime collects garbage on another
// thread), so the tasks are pinned only while the stops come at least
// pinRate a second (Config.PinRate), and freed after an unpinAfter
// stretch below a quarter of it. The tasks' own mask is replaced meanwhile; they get the
// agent's back when freed. Nothing recorded depends on it: a failure to
// move a task costs speed only, and is not reported.
type pinner struct {
	stops atomic.Int64 // the tracer's stops so far

	// rate pins the tasks (stops a second); under unpin they are freed.
	rate, unpin int64

	// The tracer's side: its last look at the stop rate.
	lookedAt    int64 // Now() at the last look
	stopsLooked int64

	mu     sync.Mutex
	on     bool
	ever   bool         // pinned once: a task made as the tasks were freed may still be
	tracer int          // the tracing thread's id
	orig   unix.CPUSet  // the mask the tasks start with (the agent's)
	tids   map[int]bool // the tasks moved, or made by a moved task
	done   chan struct{}
}

const (
	// pinRate is the stop rate from which the tasks are kept on one CPU:
	// 200 fork+exec+exits a second, where the cross-CPU wake-ups cost
	// about 3% of a CPU.
	pinRate = 1000
	// The rate under which they are let go, once it has held for
	// unpinAfter, is a quarter of the pinning rate (250 a second).
	unpinAfter = 20 * time.Millisecond
)

// often says whether n stops in dt nanoseconds come at rate a second or
// more.
func often(n, dt, rate int64) bool {
	return dt > 0 && n*int64(time.Second) >= rate*dt
}

// newPinner starts the watcher that frees the tasks; stop ends it. It is
// made on the tracing thread.
func newPinner(rate int64) *pinner {
	p := &pinner{rate: rate, unpin: rate / 4, tracer: unix.Gettid(), tids: map[int]bool{}, done: make(chan struct{}), lookedAt: Now()}
	if err := unix.SchedGetaffinity(0, &p.orig); err != nil {
		return nil // no mask to give back: never pin
	}
	go p.watch()
	return p
}

func (p *pinner) stop() {
	if p != nil {
		close(p.done)
	}
}

// stopped counts one stop; it runs on the tracer at every stop.
func (p *pinner) stopped() {
	if p != nil {
		p.stops.Add(1)
	}
}

// look pins the tasks when the stops of the stretch since the last look
// came at the pinning rate or more. It runs on the tracer, which owns tids: the
// tasks it knows.
func (p *pinner) look(tids func() []int) {
	if p == nil {
		return
	}
	now, n := Now(), p.stops.Load()
	dt, dn := now-p.lookedAt, n-p.stopsLooked
	p.lookedAt, p.stopsLooked = now, n
	if !often(dn, dt, p.rate) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on {
		return
	}
	var cpu uint32
	if _, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); errno != 0 {
		return
	}
	var one unix.CPUSet
	one.Set(int(cpu))
	unix.SchedSetaffinity(0, &one)
	for _, tid := range tids() {
		unix.SchedSetaffinity(tid, &one)
		p.tids[tid] = true
	}
	p.on, p.ever = true, true
}

// born notes a new task: made while the tasks are pinned, it took its
// creator's mask, and is freed with them. One made just before they were
// freed, and seen only after, took the pinned mask: it is given the
// agent's (a mask read, only once a pin has been).
func (p *pinner) born(tid int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on {
		p.tids[tid] = true
		return
	}
	if p.ever {
		var m unix.CPUSet
		if unix.SchedGetaffinity(tid, &m) == nil && m != p.orig {
			unix.SchedSetaffinity(tid, &p.orig)
		}
	}
}

// gone forgets an ended task.
func (p *pinner) gone(tid int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.tids, tid)
	p.mu.Unlock()
}

// watch frees the tasks once the stops have come under the unpinning rate for
// unpinAfter: the tracer, blocked in wait while nothing stops, cannot.
func (p *pinner) watch() {
	tick := time.NewTicker(unpinAfter)
	defer tick.Stop()
	last := p.stops.Load()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		n := p.stops.Load()
		if !often(n-last, int64(unpinAfter), p.unpin) {
			p.free()
		}
		last = n
	}
}

func (p *pinner) free() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	for tid := range p.tids {
		unix.SchedSetaffinity(tid, &p.orig)
	}
	unix.SchedSetaffinity(p.tracer, &p.orig)
	clear(p.tids)
	p.on = false
}
