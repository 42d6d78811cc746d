package sim_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	servingv1alpha1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
)

var (
	cluster *sim.Cluster
	cs      *kubernetes.Clientset
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// No cluster: every test skips itself (t.Skip reports them as skipped, os.Exit(0) would
		// report nothing at all).
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := sim.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("simulated cluster %s up in %v (%d nodes x %d GPUs)\n",
		c.Name, time.Since(start).Round(10*time.Millisecond), c.Nodes, c.GPUsPerNode)
	defer func() {
		stop := time.Now()
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Printf("simulated cluster %s down in %v\n", c.Name, time.Since(stop).Round(10*time.Millisecond))
	}()
	cluster = c
	cs, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

const loadDelay = 3 * time.Second

// needCluster skips a test in -short mode, where TestMain starts no cluster.
func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the simulated cluster is not started in -short mode")
	}
}

func TestNodes(t *testing.T) {
	needCluster(t)
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != cluster.Nodes {
		t.Fatalf("%d nodes, want %d", len(nodes.Items), cluster.Nodes)
	}
	zones := map[string]int{}
	for _, n := range nodes.Items {
		gpus := n.Status.Allocatable[sim.GPUResource]
		if gpus.Value() != int64(cluster.GPUsPerNode) {
			t.Errorf("node %s: allocatable %s = %s, want %d", n.Name, sim.GPUResource, gpus.String(), cluster.GPUsPerNode)
		}
		if !strings.HasPrefix(n.Name, sim.NodeNamePrefix) {
			t.Errorf("node %s: want the prefix %s", n.Name, sim.NodeNamePrefix)
		}
		if !isNodeReady(&n) {
			t.Errorf("node %s is not Ready", n.Name)
		}
		if n.Labels["nvidia.com/gpu.product"] == "" {
			t.Errorf("node %s has no nvidia.com/gpu.product label", n.Name)
		}
		zones[n.Labels["topology.kubernetes.io/zone"]]++
	}
	if len(zones) != 2 || zones[""] != 0 {
		t.Errorf("nodes per zone %v, want two zones", zones)
	}
}

// A StatefulSet whose pods carry the load-delay annotation: each pod is first Running
// but not Ready (loading weights), then Ready about the delay later; a deleted pod comes
// back.
func TestStatefulSetLoadDelay(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := namespace(t, "sts")
	labels := map[string]string{"app": "model"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "model", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         "model",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{servingv1alpha1.AnnotationSimulatedLoadDelay: loadDelay.String()},
				},
				Spec: gpuPodSpec(1),
			},
		},
	}
	created := time.Now()
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := observePods(ctx, t, ns, created, []string{"model-0", "model-1"}, true)
	for _, name := range []string{"model-0", "model-1"} {
		o := seen[name]
		loading := o.ready.Sub(o.runningNotReady)
		t.Logf("%s: Running (not Ready) after %v, Ready %v later (annotation %v; Ready condition - startTime = %v)",
			name, o.runningNotReady.Sub(created).Round(time.Millisecond), loading.Round(time.Millisecond),
			loadDelay, o.readyTransition.Sub(o.startTime))
		// Never early: kwok starts counting when it sees the pod Running, before we do.
		// The upper bound is only the polling timeout (the machine may be busy).
		if loading < loadDelay/2 {
			t.Errorf("%s: Ready %v after Running, want about %v", name, loading, loadDelay)
		}
	}

	// A deleted pod is removed (there is no kubelet: kwok's pod-delete stage) and the
	// StatefulSet controller makes it again.
	old, err := cs.CoreV1().Pods(ns).Get(ctx, "model-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "model-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var recreated *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "model-0", metav1.GetOptions{})
		if err != nil || p.UID == old.UID || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		recreated = p
		return true, nil
	})
	if err != nil {
		t.Fatalf("model-0 not recreated and Running after delete: %v", err)
	}
	t.Logf("model-0 deleted, recreated and Running after %v (Ready=%v)",
		time.Since(deleted).Round(time.Millisecond), isPodReady(recreated))
	seen = observePods(ctx, t, ns, deleted, []string{"model-0"}, true)
	t.Logf("recreated model-0 Ready %v after delete", seen["model-0"].ready.Sub(deleted).Round(time.Millisecond))
}

// Without the annotation a pod is Ready at once.
func TestNoDelayReadyAtOnce(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := namespace(t, "nodelay")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Spec: gpuPodSpec(1)}
	created := time.Now()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := observePods(ctx, t, ns, created, []string{"plain"}, false)
	t.Logf("plain: Ready %v after create", seen["plain"].ready.Sub(created).Round(time.Millisecond))
}

// A pod asking more GPUs than any node has stays Pending, unschedulable.
func TestInsufficientGPU(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := namespace(t, "toobig")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "toobig", Namespace: ns},
		Spec:       gpuPodSpec(cluster.GPUsPerNode + 1),
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "toobig", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		c := podCondition(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse, nil
	})
	if err != nil {
		t.Fatalf("no PodScheduled=False condition: %v; pod status %+v", err, last.Status)
	}
	c := podCondition(last, corev1.PodScheduled)
	t.Logf("toobig: PodScheduled=%s %s: %s", c.Status, c.Reason, c.Message)
	if !strings.Contains(c.Message, "Insufficient nvidia.com/gpu") {
		t.Errorf("PodScheduled message %q, want it to contain %q", c.Message, "Insufficient nvidia.com/gpu")
	}
	if last.Status.Phase != corev1.PodPending || last.Spec.NodeName != "" {
		t.Errorf("pod phase %s on node %q, want Pending and unbound", last.Status.Phase, last.Spec.NodeName)
	}
}

type podTimes struct {
	runningNotReady, ready     time.Time // when this test first saw it so
	startTime, readyTransition time.Time // from the pod's status (second precision)
}

// observePods polls the namespace until every named pod made after since is Ready; with
// wantLoading, each must have been seen Running but not Ready before.
func observePods(ctx context.Context, t *testing.T, ns string, since time.Time, names []string, wantLoading bool) map[string]*podTimes {
	t.Helper()
	seen := map[string]*podTimes{}
	for _, n := range names {
		seen[n] = &podTimes{}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		now := time.Now()
		for i := range pods.Items {
			p := &pods.Items[i]
			o, ok := seen[p.Name]
			if !ok || p.CreationTimestamp.Time.Before(since.Truncate(time.Second)) || p.DeletionTimestamp != nil {
				continue
			}
			if p.Status.Phase == corev1.PodRunning && !isPodReady(p) && o.runningNotReady.IsZero() {
				o.runningNotReady = now
			}
			if isPodReady(p) && o.ready.IsZero() {
				o.ready = now
				if p.Status.StartTime != nil {
					o.startTime = p.Status.StartTime.Time
				}
				o.readyTransition = podCondition(p, corev1.PodReady).LastTransitionTime.Time
			}
		}
		for _, o := range seen {
			if o.ready.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods %v not Ready: %v", names, err)
	}
	if wantLoading {
		for n, o := range seen {
			if o.runningNotReady.IsZero() {
				t.Fatalf("pod %s was never seen Running but not Ready", n)
			}
		}
	}
	return seen
}

func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pods are refused until the namespace's "default" ServiceAccount exists.
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount in %s: %v", ns.Name, err)
	}
	return ns.Name
}

func gpuPodSpec(gpus int) corev1.PodSpec {
	q := resource.MustParse(fmt.Sprint(gpus))
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  "server",
			Image: "vllm/vllm-openai:latest",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{sim.GPUResource: q},
				Limits:   corev1.ResourceList{sim.GPUResource: q},
			},
		}},
	}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isPodReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func isNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
