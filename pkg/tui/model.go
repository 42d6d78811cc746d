package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// redrawInterval is how often the view takes in the cluster's changes at most: a rollout of
// hundreds of pods sends bursts of watch events, the screen needs only the last state.
const redrawInterval = 150 * time.Millisecond

// actionTimeout bounds one confirmed action (a restart, a pause...): its requests run in a Cmd,
// outside any context of the view.
const actionTimeout = 30 * time.Second

// clockInterval refreshes ages and "loading for…" durations when nothing else changes.
const clockInterval = time.Second

type screen int

const (
	screenGroups screen = iota // the serving's groups (or the list of servings)
	screenPods                 // one group's pods with their reasons
)

// Messages.
type (
	flushMsg  struct{}
	clockMsg  struct{}
	openedMsg struct {
		name string
		st   *stream
	}
	actionDoneMsg struct {
		done string // what happened, for the notice
		err  error
	}
)

type actionKind int

const (
	actRestartGroup actionKind = iota
	actRestart
	actPause
	actResume
	actPromote
	actAbort
)

// confirmation is an action waiting for y/n.
type confirmation struct {
	kind   actionKind
	group  int
	prompt string
}

// Model is the live view: a value, updated by messages; all I/O happens in Cmds.
type Model struct {
	namespace string
	name      string // the serving on screen; "" shows the list
	fromList  bool   // started as a list: esc from a serving goes back to it
	clock     func() time.Time
	actions   Actions
	src       source
	keys      KeyMap
	styles    Styles
	help      help.Model
	footers   footers
	untilDone bool

	width, height int

	stream     *stream // feeds what is on screen
	listStream *stream // the list's stream, kept while a serving opened from it is on screen
	pending    *Snapshot
	flushing   bool

	snap Snapshot
	now  time.Time
	sv   servingView // derived from snap at each flush
	list []v1.ModelServing

	screen    screen
	showHelp  bool
	rows      []int      // indices into sv.groups (or list) that pass the filter
	body      []bodyLine // the lines of the group table: rows and the partition marker
	cursor    int        // index into rows
	offset    int        // first visible body line
	podOffset int
	selected  int // group index (or serving position) under the cursor, kept across updates
	filter    textinput.Model
	filtering bool
	confirm   *confirmation
	notice    string
	noticeErr bool
	result    error
}

// servingView is what the screen shows of one serving, derived once per change.
type servingView struct {
	ms          *v1.ModelServing
	sum         status.Summary
	groups      []status.Group
	rollout     string
	rolloutDone bool
	rolloutErr  error
	partition   int32
	// rolePartitions are the roles' canary partitions of a serving with roles, "prefill 1,
	// decode 5" ("" when none holds a canary); partition is then 0.
	rolePartitions string
	size           int
	// widths of the group and revision columns
	groupWidth, revisionWidth int
}

// NewModel makes the view of cfg.Name (or of the namespace's servings when it is empty). Its
// Init opens the watches through cfg.Client; they stop when the view moves away from them, and
// all of them when ctx ends (the model itself keeps no context).
func NewModel(ctx context.Context, cfg Config) Model {
	var src source
	if cfg.Client != nil {
		src = watchSource{client: cfg.Client, lifetime: ctx}
	}
	return newModel(cfg, src)
}

func newModel(cfg Config, src source) Model {
	cfg = cfg.withDefaults()
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "filter: group, revision, state, reason, node"
	ti.CharLimit = 64
	h := help.New()
	h.ShortSeparator = "  "
	m := Model{
		namespace: cfg.Namespace, name: cfg.Name, fromList: cfg.Name == "",
		clock: cfg.Clock, actions: cfg.Actions, src: src, keys: DefaultKeyMap(), styles: DefaultStyles(),
		help: h, filter: ti, untilDone: cfg.UntilDone, selected: -1,
	}
	m.now = m.clock()
	m.footers = renderFooters(m.help, m.keys)
	return m
}

// Init opens the stream of what is on screen and starts the clock.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.open(m.name), clockTick())
}

func clockTick() tea.Cmd {
	return tea.Tick(clockInterval, func(time.Time) tea.Msg { return clockMsg{} })
}

// open is the Cmd that starts the watches of a serving (or of the list when name is "").
func (m Model) open(name string) tea.Cmd {
	if m.src == nil {
		return nil
	}
	src, ns := m.src, m.namespace
	return func() tea.Msg { return openedMsg{name: name, st: src.open(ns, name)} }
}

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.filter.SetWidth(max(msg.Width-20, 10))
		m.clamp()
		return m, nil
	case openedMsg:
		if msg.name != m.name {
			return m, msg.st.close() // the user moved on before the watches started
		}
		var closeOld tea.Cmd
		if m.stream != nil && m.stream != m.listStream {
			closeOld = m.stream.close()
		}
		m.stream = msg.st
		if msg.name == "" {
			m.listStream = msg.st
		}
		m.pending, m.flushing = nil, false
		return m, tea.Batch(closeOld, msg.st.next())
	case snapshotMsg:
		if m.stream == nil || msg.stream != m.stream.id {
			return m, nil // from a stream closed since
		}
		m.pending = &msg.snap
		if m.flushing {
			return m, nil
		}
		m.flushing = true
		return m, tea.Tick(redrawInterval, func(time.Time) tea.Msg { return flushMsg{} })
	case flushMsg:
		m.flushing = false
		if m.pending == nil {
			return m, nil
		}
		m.snap, m.pending = *m.pending, nil
		m.now = m.clock()
		m.derive()
		var next tea.Cmd
		if m.stream != nil {
			next = m.stream.next() // re-armed only now: changes meanwhile coalesce in the stream
		}
		if m.untilDone && m.sv.ms != nil && (m.sv.rolloutDone || m.sv.rolloutErr != nil) {
			m.result = m.sv.rolloutErr
			return m, tea.Quit
		}
		return m, next
	case clockMsg:
		m.now = m.clock()
		m.derive()
		return m, clockTick()
	case actionDoneMsg:
		m.notice, m.noticeErr = msg.done, msg.err != nil
		if msg.err != nil {
			m.notice = msg.err.Error()
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	if m.filtering {
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		return m, cmd
	}
	return m, nil
}

// Result is the rollout's outcome when the view quit because it was done (Config.UntilDone).
func (m Model) Result() error { return m.result }

func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	switch {
	case m.confirm != nil:
		switch {
		case key.Matches(msg, k.Yes):
			c := *m.confirm
			m.confirm = nil
			m.notice, m.noticeErr = c.prompt+" → requested…", false
			return m, m.run(c)
		case key.Matches(msg, k.No):
			m.confirm = nil
			m.notice, m.noticeErr = "cancelled", false
		}
		return m, nil
	case m.filtering:
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filter.Blur()
			return m, nil
		case "esc":
			m.filtering = false
			m.filter.Blur()
			m.filter.SetValue("")
			m.refilter()
			return m, nil
		}
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.refilter()
		return m, cmd
	case m.showHelp:
		if key.Matches(msg, k.Quit) && msg.String() == "q" {
			return m, tea.Quit
		}
		m.showHelp = false
		return m, nil
	}

	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.Filter):
		m.filtering = true
		return m, m.filter.Focus()
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-max(m.bodyHeight()-1, 1))
	case key.Matches(msg, k.PageDown):
		m.move(max(m.bodyHeight()-1, 1))
	case key.Matches(msg, k.Top):
		m.move(-len(m.rows) - m.podLines())
	case key.Matches(msg, k.Bottom):
		m.move(len(m.rows) + m.podLines())
	case key.Matches(msg, k.Back):
		return m.back()
	case key.Matches(msg, k.Open):
		return m.openSelected()
	case m.name == "":
		// the list has no actions
	case key.Matches(msg, k.RestartGroup):
		m.ask(actRestartGroup)
	case key.Matches(msg, k.Restart):
		m.ask(actRestart)
	case key.Matches(msg, k.Pause):
		if m.sv.ms != nil && m.sv.ms.Spec.Rollout.Paused {
			m.ask(actResume)
		} else {
			m.ask(actPause)
		}
	case key.Matches(msg, k.Promote):
		m.ask(actPromote)
	case key.Matches(msg, k.Abort):
		m.ask(actAbort)
	}
	return m, nil
}

func (m *Model) back() (tea.Model, tea.Cmd) {
	switch {
	case m.filter.Value() != "":
		m.filter.SetValue("")
		m.refilter()
	case m.screen == screenPods:
		m.screen, m.podOffset = screenGroups, 0
	case m.name != "" && m.fromList:
		var closeOld tea.Cmd
		if m.stream != nil && m.stream != m.listStream {
			closeOld = m.stream.close()
		}
		m.name, m.stream, m.pending, m.flushing = "", m.listStream, nil, false
		m.sv, m.snap.Serving, m.snap.Pods, m.snap.Events = servingView{}, nil, nil, nil
		m.notice, m.confirm, m.selected, m.cursor, m.offset = "", nil, -1, 0, 0
		m.refilter()
		if m.stream == nil {
			return *m, tea.Batch(closeOld, m.open(""))
		}
		return *m, tea.Batch(closeOld, m.stream.now()) // the list changed meanwhile: a fresh snapshot
	}
	return *m, nil
}

func (m *Model) openSelected() (tea.Model, tea.Cmd) {
	if len(m.rows) == 0 {
		return *m, nil
	}
	if m.name == "" {
		ms := m.list[m.rows[m.cursor]]
		m.name, m.screen, m.selected, m.cursor, m.offset = ms.Name, screenGroups, -1, 0, 0
		m.filter.SetValue("")
		m.sv, m.rows, m.body = servingView{}, nil, nil
		m.snap = Snapshot{Servings: m.snap.Servings}
		m.pending, m.flushing = nil, false
		return *m, m.open(ms.Name)
	}
	if m.screen == screenGroups {
		m.screen, m.podOffset = screenPods, 0
	}
	return *m, nil
}

// selectedGroup is the group under the cursor.
func (m Model) selectedGroup() (status.Group, bool) {
	if m.name == "" || len(m.rows) == 0 {
		return status.Group{}, false
	}
	return m.sv.groups[m.rows[m.cursor]], true
}

// ask turns a key into a question, or a notice when the action cannot apply.
func (m *Model) ask(kind actionKind) {
	ms := m.sv.ms
	if ms == nil {
		m.notice, m.noticeErr = "the serving is not loaded yet", true
		return
	}
	c := confirmation{kind: kind}
	switch kind {
	case actRestartGroup:
		g, ok := m.selectedGroup()
		if !ok {
			m.notice, m.noticeErr = "no group selected", true
			return
		}
		if g.Role != "" {
			m.notice, m.noticeErr = fmt.Sprintf("restart a group of a role from the command line: kubectl llm restart %s --role %s --group %d", ms.Name, g.Role, g.Index), true
			return
		}
		c.group = g.Index
		c.prompt = fmt.Sprintf("Restart group %d of %s (delete its leader pod; the whole group is recreated)?", g.Index, ms.Name)
	case actRestart:
		c.prompt = fmt.Sprintf("Restart every group of %s (new restart id; groups roll by the rollout rules)?", ms.Name)
	case actPause:
		c.prompt = fmt.Sprintf("Pause the rollout of %s (groups keep their revision until resumed)?", ms.Name)
	case actResume:
		c.prompt = fmt.Sprintf("Resume the rollout of %s?", ms.Name)
	case actPromote:
		roles := len(ms.Spec.Roles) > 0
		switch {
		case roles && m.sv.rolePartitions == "":
			m.notice, m.noticeErr = "no canary to promote: every role's partition is 0", true
			return
		case roles:
			c.prompt = fmt.Sprintf("Promote the canary of %s (partitions %s → 0: every group of every role moves to %s)?",
				ms.Name, m.sv.rolePartitions, shortRevision(ms.Name, ms.Status.UpdateRevision))
		case m.sv.partition == 0:
			m.notice, m.noticeErr = "no canary to promote: the partition is 0", true
			return
		default:
			c.prompt = fmt.Sprintf("Promote the canary of %s (partition %d → 0: every group moves to %s)?",
				ms.Name, m.sv.partition, shortRevision(ms.Name, ms.Status.UpdateRevision))
		}
	case actAbort:
		cur, upd := ms.Status.CurrentRevision, ms.Status.UpdateRevision
		switch {
		case cur == "":
			m.notice, m.noticeErr = "nothing to abort: no current revision yet", true
			return
		case cur == upd && m.sv.partition == 0 && m.sv.rolePartitions == "":
			m.notice, m.noticeErr = "nothing to abort: every group is on revision "+shortRevision(ms.Name, cur), true
			return
		}
		what := "set partition 0"
		if len(ms.Spec.Roles) > 0 {
			what = "clear every role's partition"
		}
		c.prompt = fmt.Sprintf("Abort: write revision %s back to %s and %s?", shortRevision(ms.Name, cur), ms.Name, what)
	}
	m.confirm = &c
	m.notice = ""
}

// run is the Cmd that carries out a confirmed action.
func (m Model) run(c confirmation) tea.Cmd {
	a, ns, name := m.actions, m.namespace, m.name
	if a == nil {
		return func() tea.Msg { return actionDoneMsg{err: fmt.Errorf("no actions configured")} }
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		var err error
		var done string
		switch c.kind {
		case actRestartGroup:
			err, done = a.RestartGroup(ctx, ns, name, c.group), "group "+strconv.Itoa(c.group)+" restarting: leader pod deleted"
		case actRestart:
			err, done = a.Restart(ctx, ns, name), "restart requested: groups roll one by one"
		case actPause:
			err, done = a.SetPaused(ctx, ns, name, true), "rollout paused"
		case actResume:
			err, done = a.SetPaused(ctx, ns, name, false), "rollout resumed"
		case actPromote:
			err, done = a.Promote(ctx, ns, name), "canary promoted: partition 0"
		case actAbort:
			err, done = a.Abort(ctx, ns, name), "canary aborted: current revision written back"
		}
		return actionDoneMsg{done: done, err: err}
	}
}

// rolePartitions are the roles' partitions that hold a canary, "prefill 1, decode 5".
func rolePartitions(ms *v1.ModelServing) string {
	var parts []string
	for _, name := range v1.RoleNames() {
		if r := ms.Spec.Role(name); r != nil && r.Rollout != nil && ptr.Deref(r.Rollout.Partition, 0) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, *r.Rollout.Partition))
		}
	}
	return strings.Join(parts, ", ")
}

// derive recomputes what the screen shows from the snapshot, through pkg/status.
func (m *Model) derive() {
	m.list = m.snap.Servings
	if m.name != "" {
		m.sv = servingView{}
		if ms := m.snap.Serving; ms != nil && ms.Name == m.name {
			sum := status.Summarize(status.InputOf(status.Observed{Serving: ms, LWS: m.snap.LWS, Pods: m.snap.Pods}, m.now))
			msg, done, err := status.RolloutStatus(ms)
			groups := sum.Groups
			for _, rs := range sum.Roles {
				groups = append(groups, rs.Groups...) // the roles as sections: prefill's groups, then decode's
			}
			m.sv = servingView{ms: ms, sum: sum, groups: groups, rollout: strings.TrimSpace(msg),
				rolloutDone: done, rolloutErr: err, partition: ptr.Deref(ms.Spec.Rollout.Partition, 0), rolePartitions: rolePartitions(ms),
				size: max(int(ms.Spec.GroupSize), 1)}
			for _, g := range m.sv.groups {
				m.sv.groupWidth = max(m.sv.groupWidth, len(groupLabel(g)))
				m.sv.revisionWidth = max(m.sv.revisionWidth, len(m.revisionTag(g.Revision)))
			}
		}
	}
	m.refilter()
}

// refilter recomputes the visible rows and keeps the cursor on the same group.
func (m *Model) refilter() {
	if len(m.rows) > 0 && m.cursor < len(m.rows) {
		m.selected = m.rowKey(m.rows[m.cursor])
	}
	terms := strings.Fields(strings.ToLower(m.filter.Value()))
	n := len(m.sv.groups)
	if m.name == "" {
		n = len(m.list)
	}
	// A new slice: earlier copies of the model (a value) still hold the old one.
	rows := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if len(terms) == 0 || matches(m.haystack(i), terms) {
			rows = append(rows, i)
		}
	}
	m.rows = rows
	m.cursor = 0
	for i, r := range m.rows {
		if m.rowKey(r) == m.selected {
			m.cursor = i
		}
	}
	m.body = m.layoutBody()
	m.clamp()
}

func (m Model) rowKey(i int) int {
	if m.name == "" {
		return i
	}
	g := m.sv.groups[i]
	// Each role numbers its own groups: the role keeps the keys apart.
	return slices.Index(v1.RoleNames(), g.Role)*v1.MaxGroups + v1.MaxGroups + g.Index
}

func matches(hay string, terms []string) bool {
	for _, t := range terms {
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// haystack is the text a filter matches a row against.
func (m Model) haystack(i int) string {
	var b strings.Builder
	if m.name == "" {
		ms := m.list[i]
		fmt.Fprintf(&b, "%s %s %s", ms.Name, ms.Spec.Model, ms.Status.Phase)
		return strings.ToLower(b.String())
	}
	g := m.sv.groups[i]
	fmt.Fprintf(&b, "%sgroup %d g%d %s", roleWord(g), g.Index, g.Index, g.Revision)
	if g.Surge {
		b.WriteString(" surge")
	}
	if g.Ready() {
		b.WriteString(" ready")
	} else {
		b.WriteString(" unready")
	}
	for _, p := range g.Pods {
		fmt.Fprintf(&b, " %s %s %s %s", p.Name, p.State, p.Node, p.Reason)
	}
	return strings.ToLower(b.String())
}

func (m *Model) move(d int) {
	if m.screen == screenPods {
		m.podOffset = max(0, min(m.podOffset+d, m.podLines()-m.bodyHeight()))
		return
	}
	if len(m.rows) == 0 {
		return
	}
	m.cursor = max(0, min(m.cursor+d, len(m.rows)-1))
	m.selected = m.rowKey(m.rows[m.cursor])
	m.clamp()
}

// clamp keeps the cursor's line in the visible part of the body.
func (m *Model) clamp() {
	if m.cursor >= len(m.rows) {
		m.cursor = max(len(m.rows)-1, 0)
	}
	h := m.bodyHeight()
	if h <= 0 {
		return
	}
	line := m.cursorLine()
	total := len(m.body)
	if line < m.offset {
		m.offset = line
	}
	if line >= m.offset+h {
		m.offset = line - h + 1
	}
	m.offset = max(0, min(m.offset, total-h))
	if m.screen == screenPods {
		m.podOffset = max(0, min(m.podOffset, m.podLines()-h))
	}
}
