package tui

import (
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// The serving screen: its header, one row per group with a cell per pod, the partition line
// and the latest events.

// maxEventLines is how many events the serving screen shows at most.
const maxEventLines = 5

// eventCount is how many events fit; the groups come first.
func (m Model) eventCount() int {
	if m.name == "" || m.screen != screenGroups {
		return 0
	}
	n := min(len(m.snap.Events), maxEventLines)
	if n == 0 {
		return 0
	}
	room := m.height - m.fixedLines() - min(len(m.body), 4) - 2 // blank + title
	n = min(n, room)
	if n < 1 {
		return 0
	}
	return n
}

// bodyLine is a line of the group table: a row, or the partition marker.
type bodyLine struct {
	row    int // index into m.rows; -1 for the marker
	marker bool
}

// layoutBody computes the body lines; refilter keeps them in m.body.
func (m Model) layoutBody() []bodyLine {
	lines := make([]bodyLine, 0, len(m.rows)+1)
	p := int(m.sv.partition)
	marked := m.name == "" || p == 0 || len(m.rows) == 0
	for i, r := range m.rows {
		if !marked && m.sv.groups[r].Index >= p {
			lines = append(lines, bodyLine{row: -1, marker: true})
			marked = true
		}
		lines = append(lines, bodyLine{row: i})
	}
	if !marked {
		lines = append(lines, bodyLine{row: -1, marker: true})
	}
	return lines
}

func (m Model) cursorLine() int {
	if m.screen == screenPods {
		return 0
	}
	for i, l := range m.body {
		if !l.marker && l.row == m.cursor {
			return i
		}
	}
	return 0
}

// groupsBody is the visible part of the group table: h lines from the scroll offset.
func (m Model) groupsBody(h int) []string {
	if len(m.rows) == 0 {
		return []string{m.styles.Dim.Render("  no group matches the filter")}
	}
	all := m.body
	lo := min(m.offset, len(all))
	hi := min(lo+h, len(all))
	cols := m.columns()
	out := make([]string, 0, hi-lo)
	for _, l := range all[lo:hi] {
		if l.marker {
			out = append(out, m.partitionLine())
			continue
		}
		out = append(out, m.groupRow(m.sv.groups[m.rows[l.row]], l.row == m.cursor, cols))
	}
	return out
}

func (m Model) waiting() string {
	if m.snap.Synced {
		return fmt.Sprintf("  serving %s not found in namespace %s: it shows here when it is created", m.name, m.namespace)
	}
	return fmt.Sprintf("  watching serving %s in namespace %s…", m.name, m.namespace)
}

// header is the serving's identity and rollout, 5 lines.
func (m Model) header() []string {
	s := m.styles
	ms := m.sv.ms
	if ms == nil {
		return []string{s.Title.Render(m.name) + s.Dim.Render("  namespace "+m.namespace), "", "", "", ""}
	}
	phase := string(ms.Status.Phase)
	if phase == "" {
		phase = "Unknown"
	}
	right := s.phaseStyle(phase).Render(phase) + s.Dim.Render("  age "+Age(m.now, ms.CreationTimestamp.Time))
	left := s.Title.Render(ms.Name) + "  " + ms.Spec.Model + s.Dim.Render("  namespace "+ms.Namespace)
	l1 := spread(left, right, m.width)

	cur, upd := shortRevision(ms.Name, ms.Status.CurrentRevision), shortRevision(ms.Name, ms.Status.UpdateRevision)
	rev := "revision " + upd
	if cur != upd {
		rev = "revision " + cur + " → " + upd
	}
	l2 := s.Label.Render("image ") + naming.EngineImage(ms.Spec.Engine) + "   " + rev

	endpoint := ms.Status.Endpoint
	if endpoint == "" {
		endpoint = naming.Endpoint(ms)
	}
	r := ms.Spec.Rollout
	l3 := s.Label.Render("endpoint ") + endpoint + s.Dim.Render(fmt.Sprintf("   %s, maxSurge %d, maxUnavailable %d, group size %d",
		orDefault(string(r.Strategy), string(v1.RollingUpdate)), status.ResolveMaxSurge(r, m.sv.sum.Desired),
		status.ResolveMaxUnavailable(r, m.sv.sum.Desired), m.sv.size))

	sum := m.sv.sum
	prog := fmt.Sprintf("%d/%d updated · %d/%d ready · %d desired", sum.Updated, sum.Desired, sum.Ready, sum.Desired, sum.Desired)
	if extra := sum.Replicas - sum.Desired; extra > 0 {
		prog += s.Surge.Render(fmt.Sprintf(" · %d surge", extra))
	}
	if m.sv.partition > 0 {
		prog += s.Partition.Render(fmt.Sprintf(" · partition %d", m.sv.partition))
	}
	if r.Paused {
		prog += s.Warning.Render(" · PAUSED")
	}
	l4 := s.Label.Render("rollout ") + progressBar(int(sum.Updated), int(sum.Desired), 10) + " " + prog

	l5 := s.Dim.Render(m.sv.rollout)
	if len(sum.Roles) > 0 {
		// Roles as sections of the rollout: each role's new and old groups, then the planner's step.
		var parts []string
		for _, c := range RoleCountsOf(ms, sum) {
			part := fmt.Sprintf("%s new %d/%d (%d ready) old %d", c.Name, c.New, c.Desired, c.NewReady, c.Old)
			if c.RolledOut(ms) { // this role is done while another's rollout goes on
				part = s.OK.Render(part + ", rolled out")
			}
			parts = append(parts, part)
		}
		l4 = s.Label.Render("roles ") + strings.Join(parts, " · ")
		if r.Paused {
			l4 += s.Warning.Render(" · PAUSED")
		}
		if line := ServingStepLine(ms); line != "" {
			l5 = s.Dim.Render(line)
		}
	}
	switch {
	case m.sv.rolloutErr != nil:
		l5 = s.Error.Render(m.sv.rolloutErr.Error())
	case m.sv.rolloutDone:
		l5 = s.OK.Render(m.sv.rollout)
	}
	return []string{l1, l2, l3, l4, l5}
}

// progressBar draws done of total in width cells, in characters that read without colour.
func progressBar(done, total, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat("-", width) + "]"
	}
	n := min(done*width/total, width)
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", width-n) + "]"
}

// columns are the widths of the group table.
type columns struct {
	group, pods, revision, ready int
	sep                          bool // space between pod cells
	maxCells                     int
}

func (m Model) columns() columns {
	c := columns{group: max(len("GROUP"), m.sv.groupWidth), revision: max(len("REVISION"), m.sv.revisionWidth), ready: len("READY")}
	size := m.sv.size
	budget := max(m.width/3, 8)
	switch {
	case size*2-1 <= budget:
		c.sep, c.pods, c.maxCells = true, size*2-1, size
	case size <= budget:
		c.pods, c.maxCells = size, size
	default:
		c.maxCells = budget - 4 // room for "+NN"
		c.pods = budget
	}
	c.pods = max(c.pods, len("PODS"))
	return c
}

func (m Model) tableHeader() string {
	s := m.styles
	if m.screen == screenPods {
		return s.Header.Render(fmt.Sprintf("  %-9s  %-24s  %-11s  %-16s  %s", "ROLE", "POD", "STATE", "NODE", "RESTARTS"))
	}
	c := m.columns()
	h := fmt.Sprintf("  %-*s  %-*s  %-*s  %-*s  %s", c.group, "GROUP", c.pods, "PODS", c.revision, "REVISION", c.ready, "READY", "WHY NOT READY")
	var scroll string
	if lines := len(m.body); lines > m.bodyHeight() && m.sv.ms != nil {
		first := m.offset + 1
		scroll = fmt.Sprintf("lines %d–%d of %d", first, min(m.offset+m.bodyHeight(), lines), lines)
	}
	if m.filter.Value() != "" && !m.filtering {
		scroll = strings.TrimSpace(fmt.Sprintf("%d of %d groups  %s", len(m.rows), len(m.sv.groups), scroll))
	}
	if scroll == "" {
		return s.Header.Render(h)
	}
	return spread(s.Header.Render(h), s.Dim.Render(scroll), m.width)
}

func groupLabel(g status.Group) string {
	if g.Surge {
		return roleWord(g) + strconv.Itoa(g.Index) + " surge"
	}
	return roleWord(g) + strconv.Itoa(g.Index)
}

// roleWord is the group's role and a space, "" without roles.
func roleWord(g status.Group) string {
	if g.Role == "" {
		return ""
	}
	return string(g.Role) + " "
}

// groupRow is one group: its pods as cells (leader first), revision, readiness and why not.
func (m Model) groupRow(g status.Group, selected bool, c columns) string {
	s := m.styles
	var b strings.Builder
	b.Grow(m.width + 16*len(g.Pods))
	if selected {
		b.WriteString("▸ ")
	} else {
		b.WriteString("  ")
	}
	label := groupLabel(g)
	switch {
	case selected:
		b.WriteString(s.Selected.Render(label))
	case g.Surge:
		b.WriteString(s.Surge.Render(label))
	default:
		b.WriteString(label)
	}
	pad(&b, c.group-len(label)+2)

	shown := min(len(g.Pods), c.maxCells)
	w := 0
	for i, p := range g.Pods[:shown] {
		if i > 0 && c.sep {
			b.WriteByte(' ')
			w++
		}
		b.WriteString(s.cell(p.State))
		w++
	}
	if rest := len(g.Pods) - shown; rest > 0 {
		more := "+" + strconv.Itoa(rest)
		b.WriteString(more)
		w += len(more)
	}
	pad(&b, c.pods-w+2)

	tag := m.revisionTag(g.Revision)
	b.WriteString(tag)
	pad(&b, c.revision-len(tag)+2)

	ready := strconv.Itoa(g.ReadyPods) + "/" + strconv.Itoa(g.Size)
	b.WriteString(ready) // the cells carry the colour
	pad(&b, c.ready-len(ready)+2)

	if reason := g.Detail(m.now); reason != "" {
		room := m.width - (2 + c.group + 2 + c.pods + 2 + c.revision + 2 + c.ready + 2)
		if room > 1 {
			b.WriteString(s.States[firstUnready(g)].Render(ansi.Truncate(reason, room, "…")))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func firstUnready(g status.Group) status.PodState {
	for _, p := range g.Pods {
		if p.State != status.PodReady {
			return p.State
		}
	}
	return status.PodReady
}

func pad(b *strings.Builder, n int) {
	for ; n > 0; n-- {
		b.WriteByte(' ')
	}
}

// revisionTag is a group's revision, short, with new (the update revision) or old (the current
// one) while they differ.
func (m Model) revisionTag(rev string) string {
	ms := m.sv.ms
	if ms == nil {
		return ""
	}
	short := shortRevision(ms.Name, rev)
	cur, upd := ms.Status.CurrentRevision, ms.Status.UpdateRevision
	switch {
	case rev == "":
		return short
	case cur == upd:
		return short
	case rev == upd:
		return short + " new"
	case rev == cur:
		return short + " old"
	}
	return short
}

// shortRevision drops the serving's name from a revision name (<serving>-<hash>).
func shortRevision(serving, rev string) string {
	if rev == "" {
		return "-"
	}
	return strings.TrimPrefix(rev, serving+"-")
}

// partitionLine separates the groups below the partition (kept on the current revision) from
// those at and above it (moved to the update revision).
func (m Model) partitionLine() string {
	ms := m.sv.ms
	p := m.sv.partition
	text := fmt.Sprintf("── partition %d: groups ≥ %d move to %s, groups < %d stay on %s ", p, p,
		shortRevision(ms.Name, ms.Status.UpdateRevision), p, shortRevision(ms.Name, ms.Status.CurrentRevision))
	if fill := m.width - 2 - lipgloss.Width(text); fill > 0 {
		text += strings.Repeat("─", fill)
	}
	return "  " + m.styles.Partition.Render(text)
}

// eventLines are the latest events of the serving, newest last.
func (m Model) eventLines() []string {
	n := m.eventCount()
	if n == 0 {
		return nil
	}
	s := m.styles
	lines := []string{"", s.Header.Render("EVENTS")}
	events := m.snap.Events[len(m.snap.Events)-n:]
	reasonWidth := 0
	for _, e := range events {
		reasonWidth = max(reasonWidth, len(e.Reason))
	}
	for _, e := range events {
		typ := fmt.Sprintf("%-7s", e.Type)
		if e.Type == corev1.EventTypeWarning {
			typ = s.Warning.Render(typ)
		}
		when := status.EventTime(e).In(m.now.Location()).Format("15:04:05")
		msg := strings.Join(strings.Fields(e.Message), " ")
		lines = append(lines, fmt.Sprintf("  %s  %s  %-*s  %s", s.Dim.Render(when), typ, reasonWidth, e.Reason, msg))
	}
	return lines
}
