package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"

	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// Symbols show a pod's state without colour; colour only repeats it.
var symbols = map[status.PodState]string{
	status.PodReady:       "●",
	status.PodLoading:     "◐",
	status.PodStarting:    "◔",
	status.PodPending:     "○",
	status.PodFailing:     "✗",
	status.PodTerminating: "↻",
	status.PodMissing:     "·",
}

// stateOrder is the order of the legend.
var stateOrder = []status.PodState{
	status.PodReady, status.PodLoading, status.PodStarting, status.PodPending,
	status.PodFailing, status.PodTerminating, status.PodMissing,
}

// Styles are the looks of the view: data, so a test or a light terminal can swap them.
type Styles struct {
	Title     lipgloss.Style
	Label     lipgloss.Style
	Dim       lipgloss.Style
	Header    lipgloss.Style // table headers
	Selected  lipgloss.Style // the selected row
	Partition lipgloss.Style
	Surge     lipgloss.Style
	Warning   lipgloss.Style
	Error     lipgloss.Style
	OK        lipgloss.Style
	Confirm   lipgloss.Style
	States    map[status.PodState]lipgloss.Style

	// cells are the rendered symbols, made once: a grid of 1024 pods must not render 1024 styles.
	cells map[status.PodState]string
}

// DefaultStyles are the styles of a dark or light terminal alike (ANSI colours the terminal themes).
func DefaultStyles() Styles {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := Styles{
		Title:     lipgloss.NewStyle().Bold(true),
		Label:     fg(lipgloss.BrightBlack),
		Dim:       fg(lipgloss.BrightBlack),
		Header:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.BrightBlack),
		Selected:  lipgloss.NewStyle().Bold(true),
		Partition: fg(lipgloss.Cyan),
		Surge:     fg(lipgloss.Magenta),
		Warning:   fg(lipgloss.Yellow),
		Error:     fg(lipgloss.Red),
		OK:        fg(lipgloss.Green),
		Confirm:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Yellow),
		States: map[status.PodState]lipgloss.Style{
			status.PodReady:       fg(lipgloss.Green),
			status.PodLoading:     fg(lipgloss.Yellow),
			status.PodStarting:    fg(lipgloss.Blue),
			status.PodPending:     fg(lipgloss.Blue),
			status.PodFailing:     fg(lipgloss.Red).Bold(true),
			status.PodTerminating: fg(lipgloss.Magenta),
			status.PodMissing:     fg(lipgloss.BrightBlack),
		},
	}
	s.cells = map[status.PodState]string{}
	for st, style := range s.States {
		s.cells[st] = style.Render(symbols[st])
	}
	return s
}

// cell is one pod's rendered symbol.
func (s Styles) cell(st status.PodState) string {
	if c, ok := s.cells[st]; ok {
		return c
	}
	return "?"
}

// phaseStyle colours a serving's phase.
func (s Styles) phaseStyle(phase string) lipgloss.Style {
	switch phase {
	case "Ready":
		return s.OK
	case "Degraded", "Failed":
		return s.Error
	case "Progressing", "Pending":
		return s.Warning
	}
	return s.Dim
}
