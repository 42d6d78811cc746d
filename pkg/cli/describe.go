package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/pkg/tui"
)

// maxEvents bounds the events describe prints: the most recent ones.
const maxEvents = 20

// DescribeOptions print one serving as a tree: revisions, groups, pods, why each pod is not ready.
type DescribeOptions struct {
	*RootOptions
	servingTarget

	colors colors
}

func newDescribeCommand(root *RootOptions) *cobra.Command {
	o := &DescribeOptions{RootOptions: root}
	return &cobra.Command{
		Use:     "describe NAME",
		Aliases: []string{"inspect"},
		Short:   "Show a serving as a tree of revisions, groups and pods, with why each pod is not ready",
		Long: `Show one serving: its spec in brief, its conditions, then a tree serving -> revisions -> groups ->
pods. Every pod that is not ready says why (FailedScheduling: Insufficient nvidia.com/gpu,
CrashLoopBackOff with the last exit code, OOMKilled, ImagePullBackOff, loading weights for how long,
Terminating for long), and the recent events of the serving and its pods follow.`,
		Example:           "  kubectl llm describe qwen\n  kubectl llm inspect qwen -n serving",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
}

// Complete reads NAME and resolves the client.
func (o *DescribeOptions) Complete(_ *cobra.Command, args []string) error {
	o.colors = newColors(o.RootOptions, o.Streams.Out)
	return o.complete(o.RootOptions, args)
}

// Validate has nothing beyond NAME to check.
func (o *DescribeOptions) Validate() error {
	if err := o.validateOneName("kubectl llm describe NAME"); err != nil {
		return err
	}
	return nil
}

// describeData is everything describe prints, read once.
type describeData struct {
	serving   *v1.ModelServing
	revisions []appsv1.ControllerRevision
	summary   status.Summary
	// updateRev is the revision the operator rolls out, from its status ("" until it reports one).
	updateRev string
	// specErr is why spec.template does not decode (the operator reports it as InvalidSpec).
	specErr error
	pods    []corev1.Pod
	events  []corev1.Event
}

// Run reads the serving and what belongs to it, and prints it.
func (o *DescribeOptions) Run(ctx context.Context) error {
	d, err := o.load(ctx)
	if err != nil {
		return err
	}
	return o.print(o.Streams.Out, d)
}

func (o *DescribeOptions) load(ctx context.Context) (*describeData, error) {
	host := o.host()
	ms, err := getServing(ctx, o.client, o.namespace, o.Name, host)
	if err != nil {
		return nil, err
	}
	d := &describeData{serving: ms}
	mine := client.MatchingLabels{v1.LabelName: ms.Name}
	var revs appsv1.ControllerRevisionList
	if err := o.client.List(ctx, &revs, revision.ListOptions(ms.Namespace, ms.Name)...); err != nil {
		return nil, fmt.Errorf("list revisions: %w", explain(err, host))
	}
	d.revisions = revs.Items
	revision.Sort(d.revisions)
	var pods corev1.PodList
	if err := o.client.List(ctx, &pods, client.InNamespace(ms.Namespace), mine); err != nil {
		return nil, fmt.Errorf("list pods: %w", explain(err, host))
	}
	d.pods = pods.Items
	// The operator's update revision, not one hashed here: another version of the operator may
	// name revisions otherwise, and the pods carry the operator's names.
	d.updateRev = ms.Status.UpdateRevision
	seen := observedOf(ctx, o.client, ms, d.pods)
	input := status.InputOf(seen, o.Clock.Now())
	d.specErr = input.SpecError
	d.summary = status.Summarize(input)
	var events corev1.EventList
	if err := o.client.List(ctx, &events, client.InNamespace(ms.Namespace)); err != nil {
		return nil, fmt.Errorf("list events: %w", explain(err, host))
	}
	d.events = status.EventsOf(events.Items, ms.Name, ms.UID, d.pods)
	for _, e := range events.Items {
		// FailedCreate and the like of the serving's LWS or one of its StatefulSets.
		io := e.InvolvedObject
		if io.Kind != "LeaderWorkerSet" && io.Kind != "StatefulSet" {
			continue
		}
		if serving, _ := naming.RoleOfWorkload(io.Kind, io.Name); serving == ms.Name || naming.ServingOfWorkload(io.Kind, io.Name) == ms.Name {
			d.events = append(d.events, e)
		}
	}
	sort.SliceStable(d.events, func(i, j int) bool {
		ti, tj := status.EventTime(d.events[i]), status.EventTime(d.events[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return d.events[i].Name < d.events[j].Name
	})
	if n := len(d.events); n > maxEvents {
		d.events = d.events[n-maxEvents:]
	}
	return d, nil
}

// observedOf is what a command read of a serving with its pods: with the serving's
// LeaderWorkerSet, or each role's, when it is the serving's. One that cannot be read is left out:
// it only sharpens "done" and where a recreated group comes back.
func observedOf(ctx context.Context, c client.Client, ms *v1.ModelServing, pods []corev1.Pod) status.Observed {
	get := func(name string) *lwsv1.LeaderWorkerSet {
		l := &lwsv1.LeaderWorkerSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ms.Namespace, Name: name}, l); err == nil && metav1.IsControlledBy(l, ms) {
			return l
		}
		return nil // not found, unreadable, or another's LeaderWorkerSet with our name
	}
	seen := status.Observed{Serving: ms, LWS: get(ms.Name), Pods: pods}
	if len(ms.Spec.Roles) == 0 {
		return seen
	}
	lws := map[v1.RoleName]*lwsv1.LeaderWorkerSet{}
	for _, r := range ms.Spec.Roles {
		if l := get(naming.RoleWorkloadName(ms.Name, r.Name)); l != nil {
			lws[r.Name] = l
		}
	}
	seen.Roles = status.RoleInputs(ms, pods, lws)
	return seen
}

func (o *DescribeOptions) print(w io.Writer, d *describeData) error {
	ms, s := d.serving, d.summary
	spec := ms.Spec
	now := o.Clock.Now()
	gpus := int32(0)
	if spec.Resources.GPUs != nil {
		gpus = *spec.Resources.GPUs
	}
	var kv [][]string
	kv = append(kv, []string{"Name:", ms.Name})
	kv = append(kv, []string{"Namespace:", ms.Namespace})
	kv = append(kv, []string{"Model:", spec.Model})
	kv = append(kv, []string{"Engine:", fmt.Sprintf("%s, image %s, port %d", orDefault(string(spec.Engine.Type), "vllm"), naming.EngineImage(spec.Engine), spec.Engine.Port)})
	r := spec.Rollout
	if len(spec.Roles) == 0 {
		kv = append(kv, []string{"Groups:", fmt.Sprintf("%d desired, %d exist, %d ready, %d up-to-date; %d pod(s) per group, %d nvidia.com/gpu per pod",
			s.Desired, s.Replicas, s.Ready, s.Updated, max(spec.GroupSize, 1), gpus)})
		kv = append(kv, []string{"Rollout:", fmt.Sprintf("%s, maxSurge %s, maxUnavailable %s, partition %d%s", orDefault(string(r.Strategy), "RollingUpdate"),
			intstrOr(r.MaxSurge, "0"), intstrOr(r.MaxUnavailable, "1"), ptr.Deref(r.Partition, 0), map[bool]string{true: ", paused", false: ""}[r.Paused])})
	} else {
		kv = append(kv, []string{"Groups:", fmt.Sprintf("%d desired, %d exist, %d ready, %d up-to-date, over %d roles", s.Desired, s.Replicas, s.Ready, s.Updated, len(s.Roles))})
		for _, rs := range s.Roles {
			eff, _ := spec.ForRole(rs.Role)
			kv = append(kv, []string{"  " + string(rs.Role) + ":", fmt.Sprintf("%d desired, %d exist, %d ready, %d up-to-date; %d pod(s) per group, %d nvidia.com/gpu per pod; maxSurge %s, maxUnavailable %s, partition %d",
				rs.Desired, rs.Replicas, rs.Ready, rs.Updated, max(eff.GroupSize, 1), ptr.Deref(eff.Resources.GPUs, 0),
				intstrOr(eff.Rollout.MaxSurge, "0"), intstrOr(eff.Rollout.MaxUnavailable, "1"), ptr.Deref(eff.Rollout.Partition, 0))})
		}
		kv = append(kv, []string{"Rollout:", fmt.Sprintf("%s, every role together%s", orDefault(string(r.Strategy), "RollingUpdate"), map[bool]string{true: ", paused", false: ""}[r.Paused])})
		if p := ms.Status.Plan; p != nil { // an operator that reports no plan: no line
			kv = append(kv, []string{"Plan:", fmt.Sprintf("%s (%s)", tui.ServingStepLine(ms), p.State)})
		}
	}
	kv = append(kv, []string{"Revisions:", fmt.Sprintf("current %s, update %s%s", orDash(ms.Status.CurrentRevision), orDash(d.updateRev), staleNote(ms))})
	if d.specErr != nil {
		kv = append(kv, []string{"Invalid spec:", d.specErr.Error()})
	}
	kv = append(kv, []string{"Phase:", o.colors.state(orDash(string(ms.Status.Phase)))})
	kv = append(kv, []string{"Endpoint:", orDash(ms.Status.Endpoint)})
	kv = append(kv, []string{"Age:", tui.Age(now, ms.CreationTimestamp.Time)})
	renderTable(w, kv, nil)
	for _, warn := range tui.RoleSkew(s) {
		fmt.Fprintln(w, o.colors.state("Warning")+": "+warn)
	}
	fmt.Fprintln(w, "Conditions:")
	if len(ms.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  (none yet: is the operator running? kubectl llm operator, or kubectl llm install)")
	} else {
		rows := [][]string{{"  TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}}
		for _, c := range ms.Status.Conditions {
			rows = append(rows, []string{"  " + c.Type, o.colors.state(string(c.Status)), c.Reason, tui.Age(now, c.LastTransitionTime.Time), c.Message})
		}
		renderTable(w, rows, nil)
	}
	fmt.Fprintln(w)
	renderTable(w, o.tree(d), nil)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Events:")
	if len(d.events) == 0 {
		fmt.Fprintln(w, "  <none>")
		return nil
	}
	rows := [][]string{{"  AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"}}
	for _, e := range d.events {
		rows = append(rows, []string{"  " + eventAge(now, e), o.colors.state(e.Type), e.Reason,
			strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, strings.TrimSpace(e.Message)})
	}
	renderTable(w, rows, nil)
	return nil
}

// tree lays out serving -> [roles ->] revisions (newest first) -> groups -> pods as table rows.
func (o *DescribeOptions) tree(d *describeData) [][]string {
	ms, s := d.serving, d.summary
	rows := [][]string{{"NAME", "STATUS", "INFO"}}
	rows = append(rows, []string{"ModelServing/" + ms.Name, o.colors.state(orDash(string(ms.Status.Phase))),
		fmt.Sprintf("%d/%d groups ready, %d up-to-date", s.Ready, s.Desired, s.Updated)})
	if len(s.Roles) == 0 {
		return append(rows, o.revisionRows(d, s.Groups, "")...)
	}
	// A serving with roles: each role numbers its own groups, so each gets its revisions.
	for i, rs := range s.Roles {
		last := i == len(s.Roles)-1
		state := "Ready"
		if rs.Available.Status != metav1.ConditionTrue {
			state = "NotReady"
		}
		rows = append(rows, []string{branch("", last) + "Role " + string(rs.Role), o.colors.state(state),
			fmt.Sprintf("%d/%d groups ready, %d up-to-date; LeaderWorkerSet %s", rs.Ready, rs.Desired, rs.Updated, naming.RoleWorkloadName(ms.Name, rs.Role))})
		rows = append(rows, o.revisionRows(d, rs.Groups, indent("", last))...)
	}
	return rows
}

// revisionRows lays out revisions (newest first) -> groups -> pods of the given groups under prefix.
func (o *DescribeOptions) revisionRows(d *describeData, groups []status.Group, prefix string) [][]string {
	ms := d.serving
	now := o.Clock.Now()
	var rows [][]string
	byRev := map[string][]status.Group{}
	for _, g := range groups {
		byRev[g.Revision] = append(byRev[g.Revision], g)
	}
	type revNode struct {
		name, label, info string
		specOnly          bool // the spec, not a revision: no group can be of it yet
	}
	var nodes []revNode
	known := map[string]bool{}
	for i := len(d.revisions) - 1; i >= 0; i-- {
		cr := d.revisions[i]
		known[cr.Name] = true
		var marks []string
		if cr.Name == ms.Status.CurrentRevision {
			marks = append(marks, "current")
		}
		if cr.Name == d.updateRev {
			marks = append(marks, "update")
		}
		if len(marks) == 0 && len(byRev[cr.Name]) == 0 {
			continue // history only: kubectl llm rollout history lists it
		}
		info := ""
		if rs, err := revision.Decode(&cr); err == nil {
			info = revision.ChangeCause(rs)
		}
		label := fmt.Sprintf("Revision %d %s", cr.Revision, cr.Name)
		if len(marks) > 0 {
			label += " (" + strings.Join(marks, ", ") + ")"
		}
		nodes = append(nodes, revNode{name: cr.Name, label: label, info: info})
	}
	// The spec as it is now, when no recorded revision has it (compared by content: naming the
	// revision is the operator's job): the operator has not recorded it yet, or is not running.
	isSpec := specMatcher(ms)
	if rs, err := revision.SpecOf(ms.Spec); err == nil && !slices.ContainsFunc(d.revisions, func(cr appsv1.ControllerRevision) bool { return isSpec(&cr) }) {
		name, label := "", fmt.Sprintf("Spec of generation %d (not recorded yet)", ms.Generation)
		if d.updateRev != "" && !known[d.updateRev] && status.OfSpec(ms) {
			name, label = d.updateRev, "Revision "+d.updateRev+" (update, not recorded yet)"
		}
		nodes = append([]revNode{{name: name, label: label, info: revision.ChangeCause(rs), specOnly: name == ""}}, nodes...)
		if name != "" {
			known[name] = true
		}
	}
	var others []string
	for rev := range byRev {
		if !known[rev] {
			others = append(others, rev)
		}
	}
	sort.Strings(others)
	for _, rev := range others {
		label := "Revision " + rev + " (not recorded)"
		if rev == "" {
			label = "No pods yet"
		}
		nodes = append(nodes, revNode{name: rev, label: label})
	}
	for i, n := range nodes {
		lastRev := i == len(nodes)-1
		rows = append(rows, []string{branch(prefix, lastRev) + n.label, "", n.info})
		groups := byRev[n.name]
		if n.specOnly {
			groups = nil
		}
		for j, g := range groups {
			gp := indent(prefix, lastRev)
			lastGroup := j == len(groups)-1
			label := fmt.Sprintf("Group %d", g.Index)
			if g.Surge {
				label += " (surge)"
			}
			state := fmt.Sprintf("%d/%d ready", g.ReadyPods, g.Size)
			rows = append(rows, []string{branch(gp, lastGroup) + label, o.colors.state(map[bool]string{true: "Ready", false: state}[g.Ready()]), g.Detail(now)})
			for k, p := range g.Pods {
				pp := indent(gp, lastGroup)
				name := p.Name + " (" + p.Role() + ")"
				if p.Name == "" {
					name = p.Role() + " (no pod)"
				}
				info := p.Detail(now)
				if p.Node != "" {
					info = strings.TrimSpace("on " + p.Node + "  " + info)
				}
				if p.Restarts > 0 && !strings.Contains(p.Reason, "restarted") {
					info += fmt.Sprintf("  restarts %d", p.Restarts)
				}
				rows = append(rows, []string{branch(pp, k == len(g.Pods)-1) + name, o.colors.state(string(p.State)), info})
			}
		}
	}
	return rows
}

func branch(prefix string, last bool) string {
	if last {
		return prefix + "└── "
	}
	return prefix + "├── "
}

func indent(prefix string, last bool) string {
	if last {
		return prefix + "    "
	}
	return prefix + "│   "
}

func eventAge(now time.Time, e corev1.Event) string {
	last := status.EventTime(e)
	count := e.Count
	if e.Series != nil {
		count = e.Series.Count
	}
	if count > 1 && !e.FirstTimestamp.IsZero() {
		return fmt.Sprintf("%s (x%d over %s)", tui.Age(now, last), count, tui.Age(now, e.FirstTimestamp.Time))
	}
	return tui.Age(now, last)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func intstrOr(v *intstr.IntOrString, def string) string {
	if v == nil {
		return def
	}
	return v.String()
}
