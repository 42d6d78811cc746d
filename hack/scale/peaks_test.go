package main

import (
	"testing"
	"time"
)

// The peaks keep each series' highest sample and when it came; heap held is the heap in use and
// the free heap not yet returned to the system.
func TestHeapPeaksKeepTheHighestSample(t *testing.T) {
	const mib = 1 << 20
	scrape := func(inUse, idle, released, goal float64) map[string]float64 {
		return map[string]float64{"go_memstats_heap_inuse_bytes": inUse * mib, "go_memstats_heap_idle_bytes": idle * mib,
			"go_memstats_heap_released_bytes": released * mib, "go_memstats_next_gc_bytes": goal * mib}
	}
	p := &heapPeaks{}
	p.note(scrape(50, 10, 5, 80), 2*time.Second)
	p.note(scrape(90, 4, 4, 150), 4*time.Second)
	p.note(scrape(70, 60, 10, 140), 6*time.Second)
	if p.inUse != 90 || p.inUseAt != 4*time.Second {
		t.Errorf("in use at most %.0f MiB at %s, want 90 at 4s", p.inUse, p.inUseAt)
	}
	if p.held != 120 || p.heldAt != 6*time.Second {
		t.Errorf("held at most %.0f MiB at %s, want 120 (70 in use + 50 free not returned) at 6s", p.held, p.heldAt)
	}
	if p.goal != 150 || p.samples != 3 {
		t.Errorf("goal %.0f MiB over %d samples, want 150 over 3", p.goal, p.samples)
	}
}
