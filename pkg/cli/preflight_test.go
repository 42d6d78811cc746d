package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestCalculateFit(t *testing.T) {
	node := func(name string, alloc, req int64, sched bool) cli.NodeCapacity {
		return cli.NodeCapacity{Name: name, Allocatable: alloc, Requested: req, Schedulable: sched}
	}
	cases := []struct {
		name string
		in   cli.FitInput
		want cli.Fit
	}{
		{
			name: "a surge group fits in the spare GPUs of two nodes",
			in:   cli.FitInput{Nodes: []cli.NodeCapacity{node("a", 8, 4, true), node("b", 8, 4, true)}, GPUsPerPod: 4, GroupSize: 2, NewGroups: 1},
			want: cli.Fit{SparePods: 2, CapacityPods: 4, NeedPods: 2, Fits: true, GroupPlaceable: true},
		},
		{
			name: "spare GPUs split over nodes hold fewer pods than their sum suggests",
			in:   cli.FitInput{Nodes: []cli.NodeCapacity{node("a", 8, 5, true), node("b", 8, 5, true)}, GPUsPerPod: 4, GroupSize: 1, NewGroups: 1},
			want: cli.Fit{SparePods: 0, CapacityPods: 4, NeedPods: 1, Fits: false, GroupPlaceable: true},
		},
		{
			name: "a cordoned node's spare GPUs do not count",
			in:   cli.FitInput{Nodes: []cli.NodeCapacity{node("a", 8, 8, true), node("b", 8, 0, false)}, GPUsPerPod: 8, GroupSize: 1, NewGroups: 1},
			want: cli.Fit{SparePods: 0, CapacityPods: 1, NeedPods: 1, Fits: false, GroupPlaceable: true},
		},
		{
			name: "a group larger than the whole cluster is never placeable",
			in:   cli.FitInput{Nodes: []cli.NodeCapacity{node("a", 8, 0, true)}, GPUsPerPod: 8, GroupSize: 2, NewGroups: 0},
			want: cli.Fit{SparePods: 1, CapacityPods: 1, NeedPods: 0, Fits: true, GroupPlaceable: false},
		},
		{
			name: "pods without GPUs always fit",
			in:   cli.FitInput{GPUsPerPod: 0, GroupSize: 4, NewGroups: 2},
			want: cli.Fit{SparePods: -1, CapacityPods: -1, NeedPods: 8, Fits: true, GroupPlaceable: true},
		},
		{
			name: "over-committed requests leave no spare, not a negative one",
			in:   cli.FitInput{Nodes: []cli.NodeCapacity{node("a", 4, 6, true), node("b", 4, 0, true)}, GPUsPerPod: 2, GroupSize: 2, NewGroups: 1},
			want: cli.Fit{SparePods: 2, CapacityPods: 4, NeedPods: 2, Fits: true, GroupPlaceable: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cli.CalculateFit(tc.in)); diff != "" {
				t.Errorf("fit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeCapacitiesCountOnlyLivePodsAndSchedulableNodes(t *testing.T) {
	gpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	}
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"pool": "h100"}}, Status: corev1.NodeStatus{Allocatable: gpus(8)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"pool": "a10"}}, Status: corev1.NodeStatus{Allocatable: gpus(8)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"pool": "h100"}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}, Status: corev1.NodeStatus{Allocatable: gpus(8)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"pool": "h100"}}, Status: corev1.NodeStatus{Allocatable: gpus(8), Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}},
	}
	pod := func(node string, phase corev1.PodPhase, req, limOnly int64) corev1.Pod {
		c := corev1.Container{Name: "x"}
		if req > 0 {
			c.Resources.Requests = gpus(req)
		}
		if limOnly > 0 {
			c.Resources.Limits = gpus(limOnly)
		}
		return corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}}, Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []corev1.Pod{pod("a", corev1.PodRunning, 2, 0), pod("a", corev1.PodPending, 0, 1), pod("a", corev1.PodSucceeded, 4, 0), pod("", corev1.PodPending, 8, 0)}
	sched := v1.SchedulingSpec{NodeSelector: map[string]string{"pool": "h100"}, Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	got := cli.NodeCapacities(nodes, pods, sched)
	want := []cli.NodeCapacity{
		{Name: "a", Allocatable: 8, Requested: 3, Schedulable: true},
		{Name: "b", Allocatable: 8, Schedulable: false, Why: "node selector"},
		{Name: "c", Allocatable: 8, Schedulable: true},
		{Name: "d", Allocatable: 8, Schedulable: false, Why: "not ready"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capacities (-want +got):\n%s", diff)
	}
	if got := cli.NodeCapacities(nodes[2:3], nil, v1.SchedulingSpec{}); got[0].Schedulable || got[0].Why != "taint gpu:NoSchedule" {
		t.Errorf("an untolerated taint: %+v", got[0])
	}
}

// gpuNode creates a node offering gpus nvidia.com/gpu (status written through the subresource).
func gpuNode(t *testing.T, name string, gpus int64, mutate func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	create(t, n)
	// The API server taints a new node not-ready until a node controller (absent here) sees it ready.
	n.Spec.Taints = nil
	if mutate != nil {
		mutate(n)
	}
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// TestPreflight runs the command against nodes with GPUs in the API server: two full nodes, one
// cordoned, one tainted. The only test that creates nodes (they are cluster-wide).
func TestPreflight(t *testing.T) {
	ns := namespace(t, "preflight")
	gpuNode(t, "pf-a", 8, nil)
	gpuNode(t, "pf-b", 8, nil)
	gpuNode(t, "pf-c", 8, func(n *corev1.Node) { n.Spec.Unschedulable = true })
	gpuNode(t, "pf-d", 8, func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "reserved", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	})
	big := fixtures.Serving("big", ns).Replicas(2).GroupSize(2).GPUs(4).Surge(intstr.FromInt32(1), intstr.FromInt32(0))
	seedServing(t, ns, big)
	for g := 0; g < 2; g++ {
		for w := 0; w < 2; w++ {
			node := map[int]string{0: "pf-a", 1: "pf-b"}[g]
			p := seedPodWith(t, ns, 4, fixtures.Pod("big", g, w, "big-r1"), false, func(p *corev1.Pod) { p.Spec.NodeName = node })
			p.writeStatus(t, time.Now(), time.Minute)
		}
	}

	r := run(t, time.Now(), "-n", ns, "preflight", "big")
	expectCode(t, r, 1)
	golden(t, "preflight-surge-refused", "stdout:\n"+r.Out+"stderr:\n"+r.Err)

	seedServing(t, ns, fixtures.Serving("in-place", ns).Replicas(2).GroupSize(2).GPUs(4))
	r = run(t, time.Now(), "-n", ns, "preflight", "in-place")
	expectCode(t, r, 0)
	golden(t, "preflight-in-place", r.Out)

	tolerant := fixtures.Serving("tolerant", ns).Replicas(2).GroupSize(2).GPUs(4).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Obj()
	tolerant.Namespace = ns
	tolerant.Spec.Scheduling.Tolerations = []corev1.Toleration{{Key: "reserved", Operator: corev1.TolerationOpExists}}
	tolerant.Generation = 0
	create(t, tolerant)
	r = run(t, time.Now(), "-n", ns, "preflight", "tolerant")
	expectCode(t, r, 0)
	golden(t, "preflight-surge-fits", r.Out)

	// With roles: each role's surge fits the tolerated node's 8 spare GPUs on its own (prefill 1 pod
	// x 4, decode 2 pods x 4), not both together.
	pd := fixtures.Serving("pd", ns).Roles(1, 2, 1).GPUs(4).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Obj()
	pd.Namespace, pd.Generation = ns, 0
	pd.Spec.Roles[1].GroupSize = ptr.To[int32](2)
	pd.Spec.Scheduling.Tolerations = []corev1.Toleration{{Key: "reserved", Operator: corev1.TolerationOpExists}}
	create(t, pd)
	r = run(t, time.Now(), "-n", ns, "preflight", "pd")
	expectCode(t, r, 1)
	golden(t, "preflight-roles-together-refused", "stdout:\n"+r.Out+"stderr:\n"+r.Err)
	// Each role's nodes: prefill tolerates the reserved node, decode does not, and the NODE table
	// says which nodes each role may use.
	split := fixtures.Serving("pd-split", ns).Roles(1, 1, 1).GPUs(4).Obj()
	split.Namespace, split.Generation = ns, 0
	split.Spec.Roles[0].Scheduling.Tolerations = []corev1.Toleration{{Key: "reserved", Operator: corev1.TolerationOpExists}}
	create(t, split)
	r = run(t, time.Now(), "-n", ns, "preflight", "pd-split")
	expectCode(t, r, 0)
	golden(t, "preflight-roles-nodes", r.Out)
	// Without the toleration no spare GPU is left: the prefill role's surge is named.
	pd2 := fixtures.Serving("pd-tight", ns).Roles(1, 2, 1).GPUs(4).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).Obj()
	pd2.Namespace, pd2.Generation = ns, 0
	create(t, pd2)
	r = run(t, time.Now(), "-n", ns, "preflight", "pd-tight")
	expectCode(t, r, 1)
	for _, want := range []string{"surge of prefill fits", "spec.roles[prefill].rollout.maxSurge"} {
		if !strings.Contains(r.Err, want) {
			t.Errorf("preflight of a role that does not fit does not say %q:\n%s", want, r.Err)
		}
	}

	// deploy --preflight refuses a serving whose groups cannot fit, and writes nothing.
	r = run(t, time.Now(), "-n", ns, "deploy", "huge", "--model", "deepseek-ai/DeepSeek-R1", "--gpus", "8", "--group-size", "4", "--preflight")
	expectCode(t, r, 1)
	golden(t, "deploy-preflight-refused", "stdout:\n"+r.Out+"stderr:\n"+r.Err)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "huge"}, &v1.ModelServing{}); !apierrors.IsNotFound(err) {
		t.Errorf("deploy --preflight wrote a serving that does not fit: %v", err)
	}
	r = run(t, time.Now(), "-n", ns, "deploy", "small", "--model", "Qwen/Qwen3-0.6B", "--gpus", "0", "--preflight")
	expectCode(t, r, 0)
}
