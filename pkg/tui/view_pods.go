package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The pods screen: every pod of the selected group with its whole reason.

// podsTitle heads the pods of the selected group.
func (m Model) podsTitle() string {
	g, ok := m.selectedGroup()
	if !ok {
		return m.styles.Dim.Render("no group selected")
	}
	t := fmt.Sprintf("GROUP %s · revision %s · %d/%d ready", groupLabel(g), m.revisionTag(g.Revision), g.ReadyPods, g.Size)
	return spread(m.styles.Title.Render(t), m.styles.Dim.Render("esc back"), m.width)
}

// podsBody is every pod of the selected group with its full reason.
func (m Model) podsBody() []string {
	g, ok := m.selectedGroup()
	if !ok {
		return nil
	}
	var lines []string
	for _, p := range g.Pods {
		name, node := p.Name, p.Node
		if name == "" {
			name = "-"
		}
		if node == "" {
			node = "-"
		}
		state := m.styles.States[p.State].Render(fmt.Sprintf("%-11s", p.State))
		lines = append(lines, fmt.Sprintf("%s %-9s  %-24s  %s  %-16s  %d", m.styles.cell(p.State), p.Role(), name, state, node, p.Restarts))
		if reason := p.Detail(m.now); reason != "" {
			wrapped := ansi.Wrap(reason, max(m.width-6, 20), " ")
			for _, l := range strings.Split(wrapped, "\n") {
				lines = append(lines, "    "+m.styles.States[p.State].Render(l))
			}
		}
	}
	return lines
}

// podsScreenBody is the visible part of the pods screen: h lines from its scroll offset.
func (m Model) podsScreenBody(h int) []string {
	lines := m.podsBody()
	lo := min(m.podOffset, len(lines))
	return lines[lo:min(lo+h, len(lines))]
}

func (m Model) podLines() int { return len(m.podsBody()) }
