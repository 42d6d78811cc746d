package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// The help screen and the footers: every key and what the symbols mean.

// footers are the footer lines, rendered once: the keys do not change while the view runs.
type footers struct {
	list, groups, groupsPaused, pods, podsPaused string
}

func renderFooters(h help.Model, k KeyMap) footers {
	h.SetWidth(0) // the screen truncates to its width
	line := func(back, paused bool) string {
		open := k.Open
		open.SetHelp("enter", "pods")
		if back {
			open = k.Back
		}
		pause := k.Pause
		pause.SetHelp("p", "pause")
		if paused {
			pause.SetHelp("p", "resume")
		}
		restart, promote, abort := k.Restart, k.Promote, k.Abort
		restart.SetHelp("R", "restart all")
		promote.SetHelp("P", "promote")
		abort.SetHelp("A", "abort")
		return h.ShortHelpView([]key.Binding{k.Help, k.Quit, open, k.RestartGroup, restart, pause, promote, abort, k.Filter})
	}
	return footers{
		list:   h.ShortHelpView(k.listHelp()),
		groups: line(false, false), groupsPaused: line(false, true),
		pods: line(true, false), podsPaused: line(true, true),
	}
}

// renderHelp is the help screen: every key and what the symbols mean.
func (m Model) renderHelp() string {
	s := m.styles
	lines := []string{s.Title.Render("kubectl llm watch: keys"), "", m.help.FullHelpView(m.keys.fullHelp()), "", s.Title.Render("Pod states")}
	meaning := map[status.PodState]string{
		status.PodReady:       "serving: weights loaded, readiness probe passing",
		status.PodLoading:     "running, not ready yet: loading weights or starting the engine",
		status.PodStarting:    "scheduled: pulling the image or creating containers",
		status.PodPending:     "not scheduled yet (e.g. Insufficient nvidia.com/gpu)",
		status.PodFailing:     "CrashLoopBackOff, OOMKilled, image pull errors, exited",
		status.PodTerminating: "being deleted",
		status.PodMissing:     "expected in the group, not created yet",
	}
	for _, st := range stateOrder {
		lines = append(lines, fmt.Sprintf("  %s %-12s %s", s.cell(st), st, meaning[st]))
	}
	lines = append(lines, "",
		"A row is a group: its leader first, then its workers.",
		"new = the update revision, old = the current one; surge = an extra group during a rollout.",
		"The partition line: groups at and above it move to the update revision, those below stay.",
		"", s.Dim.Render("press any key to close"))
	out := strings.Join(lines, "\n")
	all := strings.Split(out, "\n")
	if len(all) > m.height {
		all = all[:m.height]
	}
	for i, l := range all {
		all[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(all, "\n")
}
