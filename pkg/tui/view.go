package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// The frame every screen shares: size checks, the body between header and footer, the status
// line and the footer. Each screen renders in its own file: view_serving.go (a serving's
// groups), view_pods.go (one group's pods), view_list.go (the servings of a namespace) and
// view_help.go (the keys). View only reads the model.
// The smallest window the view draws in.
const (
	minWidth  = 60
	minHeight = 12
)

// View renders the screen. It only reads the model.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "kubectl llm watch " + m.name
	return v
}

// render is the screen as text (with colours, which a no-colour profile strips).
func (m Model) render() string {
	switch {
	case m.width == 0 || m.height == 0:
		return "starting…"
	case m.width < minWidth || m.height < minHeight:
		msg := fmt.Sprintf("The window is too small (%d×%d): the live view needs at least %d×%d. Enlarge it, or press q to quit.",
			m.width, m.height, minWidth, minHeight)
		lines := strings.Split(ansi.Wrap(msg, m.width, " "), "\n")
		return strings.Join(lines[:min(len(lines), m.height)], "\n")
	case m.showHelp:
		return m.renderHelp()
	}
	var lines []string
	if m.name == "" {
		lines = append(lines, m.listTitle(), "", m.listHeader())
	} else {
		lines = append(lines, m.header()...)
		lines = append(lines, "")
		if m.screen == screenPods {
			lines = append(lines, m.podsTitle())
		}
		lines = append(lines, m.tableHeader())
	}
	body := m.renderBody()
	lines = append(lines, body...)
	for i := len(body); i < m.bodyHeight(); i++ {
		lines = append(lines, "")
	}
	lines = append(lines, m.eventLines()...)
	lines = append(lines, m.statusLine(), m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

// fixedLines is how many lines the screen uses outside the body and the events.
func (m Model) fixedLines() int {
	switch {
	case m.name == "":
		return 5 // title, blank, table header, status, footer
	case m.screen == screenPods:
		return 5 + 1 + 2 + 2 // header, blank, group title and table header, status, footer
	default:
		return 5 + 1 + 1 + 2 // header, blank, table header, status, footer
	}
}

func (m Model) bodyHeight() int {
	h := m.height - m.fixedLines()
	if n := m.eventCount(); n > 0 {
		h -= n + 2
	}
	return max(h, 0)
}

func (m Model) renderBody() []string {
	h := m.bodyHeight()
	switch {
	case m.name == "":
		return m.listBody(h)
	case m.sv.ms == nil:
		return []string{m.waiting()}
	case m.screen == screenPods:
		return m.podsScreenBody(h)
	}
	return m.groupsBody(h)
}

// statusLine is the question being asked, the filter being typed, or the last notice.
func (m Model) statusLine() string {
	s := m.styles
	switch {
	case m.confirm != nil:
		return s.Confirm.Render(m.confirm.prompt + " [y/N]")
	case m.filtering:
		return m.filter.View()
	case m.notice != "" && m.noticeErr:
		return s.Error.Render(m.notice)
	case m.notice != "":
		return s.OK.Render(m.notice)
	case m.snap.Err != nil:
		return s.Error.Render("watch: " + m.snap.Err.Error() + " (retrying)")
	case m.filter.Value() != "":
		return s.Dim.Render("filter /" + m.filter.Value() + "  (esc clears)")
	}
	return ""
}

func (m Model) footer() string {
	paused := m.sv.ms != nil && m.sv.ms.Spec.Rollout.Paused
	switch {
	case m.name == "":
		return m.footers.list
	case m.screen == screenPods && paused:
		return m.footers.podsPaused
	case m.screen == screenPods:
		return m.footers.pods
	case paused:
		return m.footers.groupsPaused
	}
	return m.footers.groups
}

// spread puts left and right on one line of width w.
func spread(left, right string, w int) string {
	gap := w - lipgloss.Width(left) - lipgloss.Width(right)
	if right == "" || gap < 2 {
		return left
	}
	return left + strings.Repeat(" ", gap) + right
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
