package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// heapPeaks samples a controller's Go runtime metrics during a burst and keeps the highest heap
// in use, heap held (in use and free but not returned to the system: what of the heap is
// resident) and heap goal (the size at which the next GC starts) it saw. The RSS after the burst
// is one moment's; these say how high the heap went on the way, which the free heap not yet
// returned after the burst comes from.
type heapPeaks struct {
	mu                sync.Mutex
	inUse, held, goal float64 // MiB
	inUseAt, heldAt   time.Duration
	samples           int
	start             time.Time
	stop              context.CancelFunc
	done              chan struct{}
}

// sampleHeap scrapes metrics every interval until the returned peaks are stopped.
func sampleHeap(ctx context.Context, metrics func(context.Context) map[string]float64, interval time.Duration) *heapPeaks {
	ctx, cancel := context.WithCancel(ctx)
	p := &heapPeaks{start: time.Now(), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if m := metrics(ctx); m != nil {
				p.note(m, time.Since(p.start))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// note takes one scrape of Go runtime metrics (client_golang's go_memstats series).
func (p *heapPeaks) note(m map[string]float64, at time.Duration) {
	inUse, held, goal := heapOf(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples++
	if inUse > p.inUse {
		p.inUse, p.inUseAt = inUse, at
	}
	if held > p.held {
		p.held, p.heldAt = held, at
	}
	p.goal = max(p.goal, goal)
}

// heapOf is a scrape's heap in use, heap held (in use, and idle not yet released) and next GC
// goal, in MiB.
func heapOf(m map[string]float64) (inUse, held, goal float64) {
	const mib = 1 << 20
	inUse = m["go_memstats_heap_inuse_bytes"] / mib
	held = inUse + (m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"])/mib
	return inUse, held, m["go_memstats_next_gc_bytes"] / mib
}

// end stops the sampling and puts the peaks into internals (nil internals: nothing to add to).
func (p *heapPeaks) end(internals map[string]float64) {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(os.Stderr, "heap during the burst (%d samples): in use at most %.1f MiB (at +%.0fs), held at most %.1f MiB (at +%.0fs), GC goal at most %.1f MiB\n",
		p.samples, p.inUse, p.inUseAt.Seconds(), p.held, p.heldAt.Seconds(), p.goal)
	if internals == nil || p.samples == 0 {
		return
	}
	internals["heap peak"], internals["heap held peak"], internals["heap goal peak"] = p.inUse, p.held, p.goal
}

// peakRSSMiB is a process's resident memory at its highest so far (VmHWM), in MiB.
func peakRSSMiB(pid int) (float64, error) { return procStatusMiB(pid, "VmHWM") }
