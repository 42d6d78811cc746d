package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// renderTable prints rows aligned with three spaces between columns, like kubectl: the one table
// writer of the commands (get, get -w, describe, preflight, rollout history). It measures what a
// terminal shows (charmbracelet/x/ansi), so a coloured cell aligns like a plain one. Given widths
// (from an earlier call), it pads to them so the lines of a watch line up with the first table.
// It returns the widths it used. Colour codes do not count towards a width.
func renderTable(w io.Writer, rows [][]string, widths []int) []int {
	if widths == nil {
		for _, r := range rows {
			for i, cell := range r {
				if i >= len(widths) {
					widths = append(widths, 0)
				}
				widths[i] = max(widths[i], visibleLen(cell))
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			b.WriteString(cell)
			if i == len(r)-1 {
				break
			}
			pad := 3
			if i < len(widths) {
				pad += widths[i] - visibleLen(cell)
			}
			b.WriteString(strings.Repeat(" ", max(pad, 1)))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	return widths
}

// visibleLen is how many cells s takes on a terminal: escape sequences take none, wide runes two.
func visibleLen(s string) int { return ansi.StringWidth(s) }
