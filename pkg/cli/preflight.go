package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// GPUResource is the extended resource GPUs are requested as.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// NodeCapacity is one node's GPUs as the preflight sees them.
type NodeCapacity struct {
	Name        string
	Allocatable int64 // nvidia.com/gpu the node offers
	Requested   int64 // nvidia.com/gpu requested by the non-terminated pods on it
	Schedulable bool  // the serving's pods may land here
	Why         string
}

// Spare is what is left for new pods.
func (n NodeCapacity) Spare() int64 { return max(n.Allocatable-n.Requested, 0) }

// FitInput is what the GPU fit is computed from.
type FitInput struct {
	Nodes      []NodeCapacity
	GPUsPerPod int64
	GroupSize  int
	// NewGroups is how many whole groups must start beside what runs now: the surge of a rollout,
	// or every group of a new serving.
	NewGroups int
}

// Fit is the answer of the GPU calculator.
type Fit struct {
	// SparePods is how many pods of GPUsPerPod the spare GPUs of schedulable nodes hold
	// (-1: unlimited, the pods need no GPU).
	SparePods int64
	// CapacityPods is the same for the schedulable nodes' whole allocatable, ignoring what runs.
	CapacityPods int64
	NeedPods     int64
	// Fits: the new groups fit in the spare GPUs.
	Fits bool
	// GroupPlaceable: one whole group fits the schedulable nodes at all (on an empty cluster).
	GroupPlaceable bool
}

// CalculateFit counts how many pods of a serving's size fit, node by node (a pod cannot span
// nodes), and whether the new groups and one whole group fit. It is pure.
func CalculateFit(in FitInput) Fit {
	size := int64(max(in.GroupSize, 1))
	f := Fit{NeedPods: int64(in.NewGroups) * size}
	if in.GPUsPerPod <= 0 {
		return Fit{SparePods: -1, CapacityPods: -1, NeedPods: f.NeedPods, Fits: true, GroupPlaceable: true}
	}
	for _, n := range in.Nodes {
		if !n.Schedulable {
			continue
		}
		f.SparePods += n.Spare() / in.GPUsPerPod
		f.CapacityPods += n.Allocatable / in.GPUsPerPod
	}
	f.Fits = f.SparePods >= f.NeedPods
	f.GroupPlaceable = f.CapacityPods >= size
	return f
}

// NodeCapacities sums, per node, the GPUs non-terminated pods request, and says whether the pods
// of a serving with the given scheduling may land there (cordon, readiness, taints, node selector).
func NodeCapacities(nodes []corev1.Node, pods []corev1.Pod, sched v1.SchedulingSpec) []NodeCapacity {
	requested := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		requested[p.Spec.NodeName] += podGPUs(p)
	}
	out := make([]NodeCapacity, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		c := NodeCapacity{Name: n.Name, Requested: requested[n.Name], Schedulable: true}
		if q, ok := n.Status.Allocatable[GPUResource]; ok {
			c.Allocatable = q.Value()
		}
		c.Why = unschedulableWhy(n, sched)
		c.Schedulable = c.Why == ""
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// podGPUs is what a pod holds, as the scheduler counts it (component-helpers' PodRequests: the
// larger of the containers' sum and any init container, sidecars, pod overhead).
func podGPUs(p *corev1.Pod) int64 {
	q := resourcehelper.PodRequests(withRequestsFromLimits(p), resourcehelper.PodResourcesOptions{})[GPUResource]
	return q.Value()
}

// withRequestsFromLimits gives every container the GPU request its limit implies, as the API
// server's defaulting does for a pod it stores (an extended resource's request is its limit).
func withRequestsFromLimits(p *corev1.Pod) *corev1.Pod {
	missing := func(cs []corev1.Container) bool {
		for _, c := range cs {
			_, req := c.Resources.Requests[GPUResource]
			_, lim := c.Resources.Limits[GPUResource]
			if lim && !req {
				return true
			}
		}
		return false
	}
	if !missing(p.Spec.Containers) && !missing(p.Spec.InitContainers) {
		return p
	}
	p = p.DeepCopy()
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			if lim, ok := r.Limits[GPUResource]; ok {
				if _, ok := r.Requests[GPUResource]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[GPUResource] = lim
				}
			}
		}
	}
	return p
}

func unschedulableWhy(n *corev1.Node, sched v1.SchedulingSpec) string {
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return "not ready"
		}
	}
	// The scheduler's own toleration match (component-helpers), on the taints that keep pods off.
	keepsOff := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	if t, untolerated := schedulinghelper.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, sched.Tolerations, keepsOff, true); untolerated {
		return "taint " + t.Key + ":" + string(t.Effect)
	}
	if len(sched.NodeSelector) > 0 && !labels.SelectorFromSet(sched.NodeSelector).Matches(labels.Set(n.Labels)) {
		return "node selector"
	}
	return ""
}

// check is one line of the preflight verdict.
type check struct {
	Name   string
	Result string // ok, FAIL or unknown
	Detail string
	err    error // why the result is unknown
}

// preflightReport is what `preflight` prints and `deploy --preflight` decides on.
type preflightReport struct {
	Serving    string
	GPUsPerPod int64
	GroupSize  int
	Groups     int32
	Strategy   v1.RolloutStrategyType
	MaxSurge   int32
	New        bool
	Nodes      []NodeCapacity
	Fit        Fit
	// Roles are each role's fit, for a serving with roles (the fields above are then the serving's).
	Roles  []roleFit
	Checks []check
}

// OK is true when no check failed.
func (r preflightReport) OK() bool { return r.Problem() == "" }

// Problem is the first failed check's detail.
func (r preflightReport) Problem() string {
	for _, c := range r.Checks {
		if c.Result == "FAIL" {
			return strings.ToLower(c.Name[:1]) + c.Name[1:] + ": " + c.Detail
		}
	}
	return ""
}

// PreflightOptions check whether a serving's rollout fits the cluster.
type PreflightOptions struct {
	*RootOptions
	servingTarget
}

func newPreflightCommand(root *RootOptions) *cobra.Command {
	o := &PreflightOptions{RootOptions: root}
	return &cobra.Command{
		Use:   "preflight NAME",
		Short: "Check that a serving's rollout fits: spare GPUs for the surge, nodes for a group, APIs installed",
		Long: `Check, before a rollout, what the scheduler would otherwise find out the hard way:

  - spare nvidia.com/gpu per node: allocatable minus what non-terminated pods request;
  - whether a surge of maxSurge whole groups (groupSize pods x GPUs each) fits in them (a Recreate or
    maxSurge 0 rollout replaces groups in place and needs no spare GPUs);
  - whether the schedulable nodes can hold one whole group at all (LWS has no gang scheduling: a
    leader may hold GPUs while its workers stay Pending);
  - whether the LeaderWorkerSet and ModelServing APIs are installed, and which versions.

For a serving with roles each role is checked on the nodes its own node selector and tolerations
allow (the NODE table has a column per role), and every role's surge must fit together.

Exits 1 with the reason when something does not fit.`,
		Example:           "  kubectl llm preflight qwen",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
}

// Complete reads NAME and resolves the client.
func (o *PreflightOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate has nothing beyond NAME to check.
func (o *PreflightOptions) Validate() error {
	if err := o.validateOneName("kubectl llm preflight NAME"); err != nil {
		return err
	}
	return nil
}

// Run prints the report and fails when something does not fit.
func (o *PreflightOptions) Run(ctx context.Context) error {
	ms, err := getServing(ctx, o.client, o.namespace, o.Name, o.host())
	if err != nil {
		return err
	}
	rep, err := o.report(ctx, ms, ms, true)
	if err != nil {
		return err
	}
	if err := printPreflight(o.Streams.Out, rep, newColors(o.RootOptions, o.Streams.Out)); err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("preflight failed: %s", rep.Problem())
	}
	return nil
}

// report gathers nodes, pods and APIs and computes the verdict for ms. existing is the stored
// serving when exists: then only a surge needs spare GPUs; a new serving needs all its groups.
func (o *PreflightOptions) report(ctx context.Context, ms, existing *v1.ModelServing, exists bool) (preflightReport, error) {
	host := o.host()
	spec := ms.Spec
	r := preflightReport{
		Serving: o.namespace + "/" + ms.Name, GroupSize: int(max(spec.GroupSize, 1)), Groups: 1,
		Strategy: spec.Rollout.Strategy, New: !exists,
	}
	if ms.Namespace != "" {
		r.Serving = ms.Namespace + "/" + ms.Name
	}
	if spec.Replicas != nil {
		r.Groups = *spec.Replicas
	}
	if spec.Resources.GPUs != nil {
		r.GPUsPerPod = int64(*spec.Resources.GPUs)
	}
	if r.Strategy == "" {
		r.Strategy = v1.RollingUpdate
	}
	r.MaxSurge = status.ResolveMaxSurge(spec.Rollout, r.Groups)
	if r.Strategy == v1.Recreate {
		r.MaxSurge = 0
	}

	r.Checks = append(r.Checks, crdCheck(ctx, o.client, "ModelServing API", servingCRDName),
		crdCheck(ctx, o.client, "LeaderWorkerSet API", lwsCRDName))
	if r.Checks[1].Result == "FAIL" {
		r.Checks[1].Detail += " (install LeaderWorkerSet, or run the operator with --lws=embedded)"
	}

	var nodes corev1.NodeList
	if err := o.client.List(ctx, &nodes); err != nil {
		return r, fmt.Errorf("list nodes: %w", explain(err, host))
	}
	var pods corev1.PodList
	active := fields.AndSelectors(fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))
	if err := o.client.List(ctx, &pods, client.MatchingFieldsSelector{Selector: active}); err != nil {
		return r, fmt.Errorf("list pods: %w", explain(err, host))
	}
	if len(spec.Roles) == 0 {
		r.Nodes = NodeCapacities(nodes.Items, pods.Items, spec.Scheduling)
		r.Fit = fitOf(r.Nodes, r.GPUsPerPod, r.GroupSize, r.Groups, r.MaxSurge, exists)
		r.Checks = append(r.Checks, fitChecks(r.Fit, r.GroupSize, r.GPUsPerPod, r.Groups, r.MaxSurge, r.Strategy, exists, "", "spec.rollout.maxSurge")...)
		return r, nil
	}
	// Each role has its own group size, GPUs and nodes; the planner surges every role in the same
	// step, so the surges must fit together as well as each on its own.
	var wanted []roleFit
	for _, name := range v1.RoleNames() {
		eff, ok := spec.ForRole(name)
		if !ok {
			continue
		}
		rf := roleFit{Role: name, GroupSize: int(max(eff.GroupSize, 1)), GPUsPerPod: int64(ptrOr(eff.Resources.GPUs, 0)), Groups: ptrOr(eff.Replicas, 1)}
		rf.MaxSurge = status.ResolveMaxSurge(eff.Rollout, rf.Groups)
		if r.Strategy == v1.Recreate {
			rf.MaxSurge = 0
		}
		rf.Nodes = NodeCapacities(nodes.Items, pods.Items, eff.Scheduling)
		rf.Fit = fitOf(rf.Nodes, rf.GPUsPerPod, rf.GroupSize, rf.Groups, rf.MaxSurge, exists)
		r.Roles = append(r.Roles, rf)
		r.Checks = append(r.Checks, fitChecks(rf.Fit, rf.GroupSize, rf.GPUsPerPod, rf.Groups, rf.MaxSurge, r.Strategy, exists, name, "spec.roles["+string(name)+"].rollout.maxSurge")...)
		if rf.Fit.NeedPods > 0 && rf.GPUsPerPod > 0 {
			wanted = append(wanted, rf)
		}
	}
	r.Nodes = r.Roles[0].Nodes
	if len(wanted) > 1 {
		r.Checks = append(r.Checks, togetherCheck(wanted, exists))
	}
	return r, nil
}

// roleFit is the GPU fit of one role of a serving with roles.
type roleFit struct {
	Role       v1.RoleName
	GroupSize  int
	GPUsPerPod int64
	Groups     int32
	MaxSurge   int32
	Nodes      []NodeCapacity
	Fit        Fit
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// fitOf is the fit of the groups that must start: the surge of a rollout, or every group of a new serving.
func fitOf(nodes []NodeCapacity, gpus int64, size int, groups, surge int32, exists bool) Fit {
	newGroups := int(surge)
	if !exists {
		newGroups = int(groups)
	}
	return CalculateFit(FitInput{Nodes: nodes, GPUsPerPod: gpus, GroupSize: size, NewGroups: newGroups})
}

// fitChecks are the "one whole group" and "groups/surge fit" checks of the serving or of one role
// (named in the checks), with the field to lower when the surge does not fit.
func fitChecks(f Fit, size int, gpus int64, groups, surge int32, strategy v1.RolloutStrategyType, exists bool, role v1.RoleName, surgeField string) []check {
	of := ""
	if role != "" {
		of = string(role) + ": "
	}
	group := check{Name: "One whole group", Result: "ok"}
	if role != "" {
		group.Name = "One whole " + string(role) + " group"
	}
	podsOf := fmt.Sprintf("%d pod(s) x %d GPU", size, gpus)
	switch {
	case gpus == 0:
		group.Detail = of + "the pods request no GPU"
	case f.GroupPlaceable:
		group.Detail = fmt.Sprintf("%s%s fit the schedulable nodes (room for %d such pods in all)", of, podsOf, f.CapacityPods)
	default:
		group.Result = "FAIL"
		group.Detail = fmt.Sprintf("%s%s never fit: the schedulable nodes hold %d such pods in all", of, podsOf, f.CapacityPods)
	}
	fit := check{Result: "ok"}
	switch {
	case !exists:
		fit.Name = "Groups fit"
		fit.Detail = fmt.Sprintf("%s%d group(s) need %d pod(s) x %d GPU; the spare GPUs hold %s such pods", of, groups, f.NeedPods, gpus, podsCount(f.SparePods))
	case surge == 0:
		fit.Name = "Surge fits"
		fit.Detail = fmt.Sprintf("%sno spare GPUs needed: %s replaces groups in place (maxSurge 0)", of, strategy)
	default:
		fit.Name = "Surge fits"
		fit.Detail = fmt.Sprintf("%sa surge of %d group(s) needs %d pod(s) x %d GPU; the spare GPUs hold %s such pods", of, surge, f.NeedPods, gpus, podsCount(f.SparePods))
	}
	if role != "" {
		fit.Name = strings.Replace(fit.Name, " fit", " of "+string(role)+" fit", 1)
	}
	if !f.Fits {
		fit.Result = "FAIL"
		if exists {
			fit.Detail += fmt.Sprintf("; free GPUs, or set %s to 0 (or strategy Recreate) to replace groups in place", surgeField)
		} else {
			fit.Detail += "; free GPUs or ask for fewer groups"
		}
	}
	return []check{group, fit}
}

// togetherCheck places the new pods of every role on the spare GPUs, role after role, node by node:
// each role's may fit alone while all of them do not.
func togetherCheck(roles []roleFit, exists bool) check {
	c := check{Name: "Every role's groups fit together", Result: "ok"}
	if exists {
		c.Name = "Every role's surge fits together"
	}
	spare := map[string]int64{}
	for _, n := range roles[0].Nodes {
		spare[n.Name] = n.Spare()
	}
	var parts []string
	for _, rf := range roles {
		left := rf.Fit.NeedPods
		for _, n := range rf.Nodes {
			for n.Schedulable && left > 0 && spare[n.Name] >= rf.GPUsPerPod {
				spare[n.Name] -= rf.GPUsPerPod
				left--
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d pod(s) x %d GPU", rf.Role, rf.Fit.NeedPods, rf.GPUsPerPod))
		if left > 0 && c.Result == "ok" {
			c.Result = "FAIL"
			c.Detail = fmt.Sprintf("%d %s pod(s) find no spare GPU once the roles before it are placed; free GPUs or lower the roles' maxSurge", left, rf.Role)
		}
	}
	if c.Result == "ok" {
		c.Detail = strings.Join(parts, " and ") + " fit the spare GPUs together"
	} else {
		c.Detail = strings.Join(parts, " and ") + ": " + c.Detail
	}
	return c
}

func podsCount(n int64) string {
	if n < 0 {
		return "any number of"
	}
	return fmt.Sprint(n)
}

func printPreflight(w io.Writer, r preflightReport, c colors) error {
	kind := "rollout"
	if r.New {
		kind = "new serving"
	}
	if len(r.Roles) == 0 {
		fmt.Fprintf(w, "Preflight of %s (%s): %d group(s) of %d pod(s), %d nvidia.com/gpu per pod, %s, maxSurge %d\n\n",
			r.Serving, kind, r.Groups, r.GroupSize, r.GPUsPerPod, r.Strategy, r.MaxSurge)
	} else {
		parts := make([]string, 0, len(r.Roles))
		for _, rf := range r.Roles {
			parts = append(parts, fmt.Sprintf("%s %d group(s) of %d pod(s), %d nvidia.com/gpu per pod, maxSurge %d", rf.Role, rf.Groups, rf.GroupSize, rf.GPUsPerPod, rf.MaxSurge))
		}
		fmt.Fprintf(w, "Preflight of %s (%s, %s): %s\n\n", r.Serving, kind, r.Strategy, strings.Join(parts, "; "))
	}
	renderTable(w, nodeRows(r), nil)
	fmt.Fprintln(w)
	rows := [][]string{{"CHECK", "RESULT", "DETAIL"}}
	for _, ch := range r.Checks {
		rows = append(rows, []string{ch.Name, c.state(ch.Result), ch.Detail})
	}
	renderTable(w, rows, nil)
	return nil
}

// nodeRows is the NODE table: whether each node is schedulable for the serving's pods, or with
// roles for each role's (a column per role, as each role has its own node selector and
// tolerations), and its GPUs, which are the same whoever asks.
func nodeRows(r preflightReport) [][]string {
	header := []string{"NODE", "SCHEDULABLE"}
	views := [][]NodeCapacity{r.Nodes}
	if len(r.Roles) > 0 {
		header, views = []string{"NODE"}, nil
		for _, rf := range r.Roles {
			header = append(header, strings.ToUpper(string(rf.Role)))
			views = append(views, rf.Nodes)
		}
	}
	rows := [][]string{append(header, "ALLOCATABLE", "REQUESTED", "SPARE")}
	for i, n := range r.Nodes {
		row := []string{n.Name}
		for _, v := range views {
			sched := "yes"
			if !v[i].Schedulable {
				sched = "no (" + v[i].Why + ")"
			}
			row = append(row, sched)
		}
		rows = append(rows, append(row, fmt.Sprint(n.Allocatable), fmt.Sprint(n.Requested), fmt.Sprint(n.Spare())))
	}
	if len(r.Nodes) == 0 {
		rows = append(rows, []string{"(no nodes)"})
	}
	return rows
}
