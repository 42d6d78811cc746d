package tui

import (
	"fmt"
	"strconv"

	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// The list screen: the servings of a namespace, one to open.

func (m Model) listTitle() string {
	t := m.styles.Title.Render("ModelServings") + m.styles.Dim.Render("  namespace "+m.namespace)
	right := fmt.Sprintf("%d servings", len(m.list))
	if !m.snap.Synced && len(m.list) == 0 {
		right = "listing…"
	}
	return spread(t, m.styles.Dim.Render(right), m.width)
}

var listFormat = "  %-24s  %-28s  %-6s  %-10s  %-12s  %s"

func (m Model) listHeader() string {
	return m.styles.Header.Render(fmt.Sprintf(listFormat, "NAME", "MODEL", "READY", "UP-TO-DATE", "PHASE", "AGE"))
}

func (m Model) listBody(h int) []string {
	if len(m.rows) == 0 {
		switch {
		case m.filter.Value() != "":
			return []string{m.styles.Dim.Render("  no serving matches the filter")}
		case m.snap.Synced:
			return []string{m.styles.Dim.Render("  no serving in namespace " + m.namespace + ": create one with kubectl llm deploy")}
		}
		return nil
	}
	lo := min(m.offset, len(m.rows))
	hi := min(lo+h, len(m.rows))
	out := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		ms := m.list[m.rows[i]]
		ready := ms.Status.ReadyGroups
		if ready == "" {
			ready = fmt.Sprintf("%d/%d", ms.Status.ReadyReplicas, status.DesiredGroups(ms.Spec))
		}
		phase := orDefault(string(ms.Status.Phase), "Unknown")
		line := fmt.Sprintf(listFormat, ms.Name, ms.Spec.Model, ready, strconv.Itoa(int(ms.Status.UpdatedReplicas)),
			phase, Age(m.now, ms.CreationTimestamp.Time))
		if i == m.cursor {
			line = "▸" + line[1:]
		}
		out = append(out, line)
	}
	return out
}
