package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

// BenchmarkView renders a serving of 128 groups × 8 pods (docs/performance.md has the numbers).
func BenchmarkView(b *testing.B) {
	for _, size := range []struct {
		name string
		w, h int
	}{{"100x30", 100, 30}, {"200x140_all_rows", 200, 140}} {
		b.Run("128x8/"+size.name, func(b *testing.B) {
			m := feed(b, newTestModel(b, "demo", size.w, size.h, nil), bigServing(128, 8))
			m = update(b, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			if got := len(m.sv.groups); got != 128 {
				b.Fatalf("%d groups", got)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkUpdate is the work of one coalesced redraw of 128 × 8 pods: the summary through
// pkg/status, the filter and the scroll.
func BenchmarkUpdate(b *testing.B) {
	m := newTestModel(b, "demo", 100, 30, nil)
	s := bigServing(128, 8)
	b.ReportAllocs()
	for b.Loop() {
		m.snap = s
		m.derive()
	}
}
