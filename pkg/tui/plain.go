package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// RunPlain prints what changes as plain lines ("12:00:01 group 1 worker 1: Ready") until ctx ends
// (it returns ctx.Err()) or, with UntilDone, until the rollout is done (nil, or the rollout's
// *status.RolloutFailedError): the view for a stdout that is not a terminal, or --no-tui.
func RunPlain(ctx context.Context, cfg Config) error {
	if cfg.Client == nil {
		return errors.New("the plain view needs a client")
	}
	cfg = cfg.withDefaults()
	return runPlain(ctx, cfg, watchSource{client: cfg.Client, lifetime: ctx})
}

func runPlain(parent context.Context, cfg Config, src source) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st := src.open(cfg.Namespace, cfg.Name)
	defer st.cancel()
	p := newPlainPrinter(cfg)
	var (
		result   error
		finished bool
	)
	st.snapshots(ctx, redrawInterval, func(s Snapshot) {
		done, err := p.print(s)
		if cfg.UntilDone && (done || err != nil) {
			result, finished = err, true
			cancel()
		}
	})
	switch {
	case p.err != nil:
		return p.err
	case finished:
		return result
	}
	return parent.Err() // ended from outside, like Run
}

// plainPrinter remembers what it printed and prints only what changed.
type plainPrinter struct {
	out       io.Writer
	clock     func() time.Time
	name, ns  string
	started   bool
	found     bool
	serving   string            // the serving's last line
	pods      map[string]string // "group 1 worker 1" → its last state line
	roles     map[string]string // a role's name → its last counts line
	step      string            // the planner's last step line, for a serving with roles
	rolledOut map[string]string // a role's name → the revision its rollout was noticed complete on
	events    map[types.UID]int32
	servings  map[string]string // list mode: name → last line
	lastError string
	err       error // the first write error
}

func newPlainPrinter(cfg Config) *plainPrinter {
	return &plainPrinter{out: cfg.Out, clock: cfg.Clock, name: cfg.Name, ns: cfg.Namespace,
		pods: map[string]string{}, roles: map[string]string{}, rolledOut: map[string]string{}, events: map[types.UID]int32{}, servings: map[string]string{}}
}

func (p *plainPrinter) printf(now time.Time, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.out, now.Format("15:04:05")+" "+format+"\n", args...)
}

// print prints the changes a snapshot brings, and reports whether the rollout is done.
func (p *plainPrinter) print(s Snapshot) (bool, error) {
	now := p.clock()
	if s.Err != nil && s.Err.Error() != p.lastError {
		p.printf(now, "watch error: %v (retrying)", s.Err)
	}
	if s.Err != nil {
		p.lastError = s.Err.Error()
	} else {
		p.lastError = ""
	}
	if p.name == "" {
		p.printList(now, s)
		return false, nil
	}
	ms := s.Serving
	if ms == nil {
		if s.Synced && (p.found || !p.started) {
			p.printf(now, "serving %s not found in namespace %s: waiting for it", p.name, p.ns)
			p.found, p.started = false, true
		}
		return false, nil
	}
	p.found, p.started = true, true
	sum := status.Summarize(status.InputOf(status.Observed{Serving: ms, LWS: s.LWS, Pods: s.Pods}, now))
	msg, done, rerr := status.RolloutStatus(ms)

	line := fmt.Sprintf("serving %s: %s, %d/%d groups ready, %d/%d updated, revision %s", ms.Name,
		orDefault(string(ms.Status.Phase), "Unknown"), sum.Ready, sum.Desired, sum.Updated, sum.Desired,
		revisionChange(ms))
	if part := ptr.Deref(ms.Spec.Rollout.Partition, 0); part > 0 {
		line += fmt.Sprintf(", partition %d", part)
	}
	if ms.Spec.Rollout.Paused {
		line += ", paused"
	}
	if line != p.serving {
		p.printf(now, "%s", line)
		if m := strings.TrimSpace(msg); m != "" {
			p.printf(now, "serving %s: %s", ms.Name, m)
		}
		p.serving = line
	}

	seen := map[string]bool{}
	p.printGroups(now, "", sum.Groups, seen)
	for _, c := range RoleCountsOf(ms, sum) {
		line := roleCountsLine(c)
		if p.roles[string(c.Name)] != line {
			p.roles[string(c.Name)] = line
			p.printf(now, "role %s: %s", c.Name, line)
		}
		if c.RolledOut(ms) && p.rolledOut[string(c.Name)] != ms.Status.UpdateRevision {
			p.rolledOut[string(c.Name)] = ms.Status.UpdateRevision
			p.printf(now, "role %s: rolled out to revision %s", c.Name, ms.Status.UpdateRevision)
		}
	}
	if line := ServingStepLine(ms); line != "" && line != p.step {
		p.step = line
		p.printf(now, "serving %s: %s", ms.Name, line)
	}
	for _, rs := range sum.Roles {
		p.printGroups(now, string(rs.Role)+" ", rs.Groups, seen)
	}
	gone := make([]string, 0)
	for where := range p.pods {
		if !seen[where] {
			gone = append(gone, where)
		}
	}
	sort.Strings(gone)
	for _, where := range gone {
		delete(p.pods, where)
		p.printf(now, "%s: gone", where)
	}

	for _, e := range s.Events {
		if count, ok := p.events[e.UID]; ok && count == e.Count {
			continue
		}
		p.events[e.UID] = e.Count
		p.printf(now, "event %s %s: %s", e.Type, e.Reason, strings.Join(strings.Fields(e.Message), " "))
	}
	return done, rerr
}

// printGroups prints a line for each pod of groups whose state changed; prefix names the role.
func (p *plainPrinter) printGroups(now time.Time, prefix string, groups []status.Group, seen map[string]bool) {
	for _, g := range groups {
		for _, pod := range g.Pods {
			where := fmt.Sprintf("%sgroup %d %s", prefix, g.Index, pod.Role())
			seen[where] = true
			state := plainState(pod)
			if p.pods[where] == state {
				continue
			}
			p.pods[where] = state
			text := string(pod.State)
			if reason := pod.Detail(now); reason != "" {
				text += " (" + reason + ")"
			}
			if g.Surge {
				where += " (surge)"
			}
			p.printf(now, "%s: %s", where, text)
		}
	}
}

// roleCountsLine is a role's groups by revision: "2 desired; new 1 (1 ready), old 1 (1 ready)".
func roleCountsLine(c RoleCounts) string {
	return fmt.Sprintf("%d desired; new %d (%d ready), old %d (%d ready)", c.Desired, c.New, c.NewReady, c.Old, c.OldReady)
}

// plainState is what must change for a pod to get a new line: its state and, where it says what
// to do, its reason. Durations in the loading and terminating reasons grow every second and
// would print a line each time.
func plainState(p status.Pod) string {
	switch p.State {
	case status.PodLoading, status.PodTerminating, status.PodReady, status.PodMissing:
		return string(p.State)
	}
	return string(p.State) + " " + p.Reason
}

func revisionChange(ms *v1.ModelServing) string {
	cur, upd := shortRevision(ms.Name, ms.Status.CurrentRevision), shortRevision(ms.Name, ms.Status.UpdateRevision)
	if cur == upd {
		return upd
	}
	return cur + " → " + upd
}

func (p *plainPrinter) printList(now time.Time, s Snapshot) {
	if s.Synced && !p.started && len(s.Servings) == 0 {
		p.printf(now, "no serving in namespace %s yet", p.ns)
	}
	p.started = p.started || s.Synced
	seen := map[string]bool{}
	for _, ms := range s.Servings {
		seen[ms.Name] = true
		ready := ms.Status.ReadyGroups
		if ready == "" {
			ready = fmt.Sprintf("%d/%d", ms.Status.ReadyReplicas, status.DesiredGroups(ms.Spec))
		}
		line := fmt.Sprintf("serving %s: %s, %s groups ready, %d updated, model %s", ms.Name,
			orDefault(string(ms.Status.Phase), "Unknown"), ready, ms.Status.UpdatedReplicas, ms.Spec.Model)
		if p.servings[ms.Name] != line {
			p.servings[ms.Name] = line
			p.printf(now, "%s", line)
		}
	}
	var gone []string
	for name := range p.servings {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		delete(p.servings, name)
		p.printf(now, "serving %s: deleted", name)
	}
}
