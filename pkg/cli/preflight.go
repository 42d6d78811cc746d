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
	Checks     []check
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
	r.Nodes = NodeCapacities(nodes.Items, pods.Items, spec.Scheduling)
	newGroups := int(r.MaxSurge)
	if !exists {
		newGroups = int(r.Groups)
	}
	r.Fit = CalculateFit(FitInput{Nodes: r.Nodes, GPUsPerPod: r.GPUsPerPod, GroupSize: r.GroupSize, NewGroups: newGroups})

	group := check{Name: "One whole group", Result: "ok"}
	podsOf := fmt.Sprintf("%d pod(s) x %d GPU", r.GroupSize, r.GPUsPerPod)
	switch {
	case r.GPUsPerPod == 0:
		group.Detail = "the pods request no GPU"
	case r.Fit.GroupPlaceable:
		group.Detail = fmt.Sprintf("%s fit the schedulable nodes (room for %d such pods in all)", podsOf, r.Fit.CapacityPods)
	default:
		group.Result = "FAIL"
		group.Detail = fmt.Sprintf("%s never fit: the schedulable nodes hold %d such pods in all", podsOf, r.Fit.CapacityPods)
	}
	r.Checks = append(r.Checks, group)

	fit := check{Result: "ok"}
	switch {
	case !exists:
		fit.Name = "Groups fit"
		fit.Detail = fmt.Sprintf("%d group(s) need %d pod(s) x %d GPU; the spare GPUs hold %s such pods", r.Groups, r.Fit.NeedPods, r.GPUsPerPod, podsCount(r.Fit.SparePods))
	case r.MaxSurge == 0:
		fit.Name = "Surge fits"
		fit.Detail = fmt.Sprintf("no spare GPUs needed: %s replaces groups in place (maxSurge 0)", r.Strategy)
	default:
		fit.Name = "Surge fits"
		fit.Detail = fmt.Sprintf("a surge of %d group(s) needs %d pod(s) x %d GPU; the spare GPUs hold %s such pods", r.MaxSurge, r.Fit.NeedPods, r.GPUsPerPod, podsCount(r.Fit.SparePods))
	}
	if !r.Fit.Fits {
		fit.Result = "FAIL"
		if exists {
			fit.Detail += "; free GPUs, or set spec.rollout.maxSurge to 0 (or strategy Recreate) to replace groups in place"
		} else {
			fit.Detail += "; free GPUs or ask for fewer groups"
		}
	}
	r.Checks = append(r.Checks, fit)
	return r, nil
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
	fmt.Fprintf(w, "Preflight of %s (%s): %d group(s) of %d pod(s), %d nvidia.com/gpu per pod, %s, maxSurge %d\n\n",
		r.Serving, kind, r.Groups, r.GroupSize, r.GPUsPerPod, r.Strategy, r.MaxSurge)
	rows := [][]string{{"NODE", "SCHEDULABLE", "ALLOCATABLE", "REQUESTED", "SPARE"}}
	for _, n := range r.Nodes {
		sched := "yes"
		if !n.Schedulable {
			sched = "no (" + n.Why + ")"
		}
		rows = append(rows, []string{n.Name, sched, fmt.Sprint(n.Allocatable), fmt.Sprint(n.Requested), fmt.Sprint(n.Spare())})
	}
	if len(r.Nodes) == 0 {
		rows = append(rows, []string{"(no nodes)"})
	}
	renderTable(w, rows, nil)
	fmt.Fprintln(w)
	rows = [][]string{{"CHECK", "RESULT", "DETAIL"}}
	for _, ch := range r.Checks {
		rows = append(rows, []string{ch.Name, c.state(ch.Result), ch.Detail})
	}
	renderTable(w, rows, nil)
	return nil
}
