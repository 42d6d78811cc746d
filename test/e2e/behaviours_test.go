package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

const settle = 90 * time.Second // bound for anything the simulated cluster does

func uids(ps []podInfo, group int) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range ps {
		if p.Group == group && !p.Deleting {
			out[p.Name] = p.UID
		}
	}
	return out
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	if err := kc.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// 1. A worker deleted in group 0: every pod of group 0 is recreated, the other groups keep theirs.
func TestWorkerLossRecreatesItsWholeGroup(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	if err := kc.Create(context.Background(), newServing(ns, "qwen", 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 groups × 2 pods Ready in %s", waitReady(t, ns, "qwen", settle))
	before := pods(t, ns, "qwen")
	g0, g1 := uids(before, 0), uids(before, 1)

	deletePod(t, ns, "qwen-0-1")
	took := testenv.Eventually(t, settle, "group 0 recreated and ready", func() (bool, error) {
		now := live(pods(t, ns, "qwen"))
		fresh := uids(now, 0)
		if len(fresh) != 2 || readyGroups(now, 2) != 2 {
			return false, fmt.Errorf("group 0 has %d live pods, %d groups ready", len(fresh), readyGroups(now, 2))
		}
		for n, uid := range fresh {
			if g0[n] == uid {
				return false, fmt.Errorf("%s still has its old UID", n)
			}
		}
		return true, nil
	})
	t.Logf("group 0 recreated and ready %s after its worker was deleted", took)
	for n, uid := range uids(pods(t, ns, "qwen"), 1) {
		if g1[n] != uid {
			t.Errorf("group 1 pod %s was recreated (%s -> %s); only group 0 should be", n, g1[n], uid)
		}
	}
}

// 2. restartPolicy None: only the deleted pod is recreated.
func TestRestartPolicyNoneRecreatesOnlyTheLostPod(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	ms := newServing(ns, "qwen", 2, 2, 1)
	ms.Spec.RestartPolicy = v1.RestartPolicyNone
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	before := pods(t, ns, "qwen")
	leader0 := uids(before, 0)["qwen-0"]
	deletePod(t, ns, "qwen-0-1")
	took := testenv.Eventually(t, settle, "the worker back", func() (bool, error) {
		now := live(pods(t, ns, "qwen"))
		u := uids(now, 0)
		return u["qwen-0-1"] != "" && u["qwen-0-1"] != uids(before, 0)["qwen-0-1"] && readyGroups(now, 2) == 2, nil
	})
	t.Logf("worker recreated %s after deletion", took)
	if got := uids(pods(t, ns, "qwen"), 0)["qwen-0"]; got != leader0 {
		t.Errorf("the leader of group 0 was recreated (%s -> %s) under restartPolicy None", leader0, got)
	}
}

// watchRollout follows the serving's pods through an informer until stop is closed and, after
// every pod event (not at sampled moments), records per group when its leader first ran the new
// revision, the most groups that existed at once, and the fewest ready groups.
type rolloutWatch struct {
	mu        sync.Mutex
	movedAt   map[int]time.Time
	maxGroups int
	minReady  int
	events    int
}

func watchRollout(t *testing.T, ns, name, newRev string, size int, stop <-chan struct{}) *rolloutWatch {
	t.Helper()
	w := &rolloutWatch{movedAt: map[int]time.Time{}, minReady: 1 << 30}
	informer := podInformer(t, ns, name)
	observe := func(any) {
		var ps []podInfo
		for _, obj := range informer.GetStore().List() {
			if info, ok := toInfo(*obj.(*corev1.Pod)); ok {
				ps = append(ps, info)
			}
		}
		groups := map[int]bool{}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		for _, p := range ps {
			if p.Deleting {
				continue
			}
			groups[p.Group] = true
			if p.Worker == 0 && p.Revision == newRev {
				if _, seen := w.movedAt[p.Group]; !seen {
					w.movedAt[p.Group] = time.Now()
				}
			}
		}
		w.maxGroups = max(w.maxGroups, len(groups))
		w.minReady = min(w.minReady, readyGroups(ps, size))
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: observe,
	}); err != nil {
		t.Fatal(err)
	}
	go informer.Run(stop)
	if !toolscache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	return w
}

func (w *rolloutWatch) order() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gs []int
	for g := range w.movedAt {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return w.movedAt[gs[i]].Before(w.movedAt[gs[j]]) })
	return gs
}

func newImage(ms *v1.ModelServing) { ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0" }

func updateRevision(t *testing.T, ns, name string, gen int64) string {
	t.Helper()
	var rev string
	testenv.Eventually(t, settle, "the new update revision", func() (bool, error) {
		ms := getServing(t, ns, name)
		rev = ms.Status.UpdateRevision
		return ms.Status.ObservedGeneration >= gen, nil
	})
	return rev
}

// 3. A template change rolls group by group, highest ordinal first; the status follows.
func TestARolloutMovesGroupsHighestFirstAndTheStatusFollows(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	if err := kc.Create(context.Background(), newServing(ns, "qwen", 4, 2, 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	update(t, ns, "qwen", newImage)
	ms := getServing(t, ns, "qwen")
	rev := updateRevision(t, ns, "qwen", ms.Generation)
	w := watchRollout(t, ns, "qwen", rev, 2, stop)

	sawProgressing := false
	testenv.Eventually(t, 3*settle, "the rollout to complete", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		if c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing); c != nil && c.Reason == v1.ReasonRollingOut {
			sawProgressing = true
		}
		return ms.Status.Phase == v1.PhaseReady && ms.Status.UpdatedReplicas == 4 && ms.Status.CurrentRevision == rev,
			fmt.Errorf("phase %s updated %d", ms.Status.Phase, ms.Status.UpdatedReplicas)
	})
	t.Logf("4-group rollout (maxSurge 0, maxUnavailable 1, 1 s load) took %s; groups moved in order %v", time.Since(start).Round(time.Millisecond), w.order())
	if got := w.order(); fmt.Sprint(got) != "[3 2 1 0]" {
		t.Errorf("groups moved in order %v, want [3 2 1 0] (highest ordinal first)", got)
	}
	if !sawProgressing {
		t.Error("the status never said RollingOut during the rollout")
	}
	ms = getServing(t, ns, "qwen")
	if c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Available after the rollout = %+v", c)
	}
	if ms.Status.ReadyReplicas != 4 || ms.Status.ReadyGroups != "4/4" {
		t.Errorf("status counts after the rollout: ready %d (%s)", ms.Status.ReadyReplicas, ms.Status.ReadyGroups)
	}
	out, err := kubectlLLM("-n", ns, "rollout", "history", "qwen")
	if err != nil {
		t.Fatalf("rollout history: %v\n%s", err, out)
	}
	if n := strings.Count(out, "qwen-"); n != 2 || !strings.Contains(out, rev) {
		t.Errorf("rollout history lists %d revisions, want the 2 of the serving (the StatefulSets' own are not ours):\n%s", n, out)
	}
}

// 4. Partition canary: with 4 groups and partition 2 only groups 2 and 3 move; partition 0 moves the rest.
func TestPartitionCanaryMovesOnlyTheHighGroups(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	if err := kc.Create(context.Background(), newServing(ns, "qwen", 4, 2, 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	oldRev := getServing(t, ns, "qwen").Status.UpdateRevision
	update(t, ns, "qwen", func(ms *v1.ModelServing) { newImage(ms); ms.Spec.Rollout.Partition = ptr.To[int32](2) })
	rev := updateRevision(t, ns, "qwen", getServing(t, ns, "qwen").Generation)
	testenv.Eventually(t, 2*settle, "the canary to hold at partition 2", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return c != nil && c.Reason == v1.ReasonCanaryHeld, nil
	})
	byGroup := map[int]string{}
	for _, p := range live(pods(t, ns, "qwen")) {
		if p.Worker == 0 {
			byGroup[p.Group] = p.Revision
		}
	}
	want := map[int]string{0: oldRev, 1: oldRev, 2: rev, 3: rev}
	if fmt.Sprint(byGroup) != fmt.Sprint(want) {
		t.Fatalf("revisions by group at partition 2 = %v, want %v", byGroup, want)
	}
	update(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Rollout.Partition = ptr.To[int32](0) })
	testenv.Eventually(t, 2*settle, "all groups on the new revision", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		return ms.Status.Phase == v1.PhaseReady && ms.Status.UpdatedReplicas == 4 && ms.Status.ObservedGeneration == ms.Generation, nil
	})
}

// 5. maxSurge 1 adds one group during the rollout, returns to the desired count, and ready groups
// never drop below desired - maxUnavailable.
func TestSurgeAddsOneGroupAndKeepsCapacity(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	ms := newServing(ns, "qwen", 4, 2, 1)
	ms.Spec.Rollout.MaxSurge, ms.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	stop := make(chan struct{})
	w := watchRollout(t, ns, "qwen", "none-yet", 2, stop) // synced: it has seen the settled serving
	update(t, ns, "qwen", newImage)
	rev := updateRevision(t, ns, "qwen", getServing(t, ns, "qwen").Generation)
	testenv.Eventually(t, 3*settle, "the surge rollout to complete", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		return ms.Status.Phase == v1.PhaseReady && ms.Status.UpdatedReplicas == 4 && ms.Status.CurrentRevision == rev && ms.Status.Replicas == 4, nil
	})
	close(stop)
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("surge rollout: at most %d groups at once, at least %d ready, over %d pod events", w.maxGroups, w.minReady, w.events)
	if w.maxGroups != 5 {
		t.Errorf("at most %d groups existed during the rollout, want 5 (4 + one surge group)", w.maxGroups)
	}
	if w.minReady < 4 {
		t.Errorf("ready groups dropped to %d, below desired - maxUnavailable = 4", w.minReady)
	}
	if n := len(live(pods(t, ns, "qwen"))); n != 8 {
		t.Errorf("%d pods after the rollout, want 8 (4 groups × 2)", n)
	}
}

// 6. maxSurge 0 with maxUnavailable 0 is refused with a clear message.
func TestNoSurgeAndNoUnavailableIsRefused(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	ms := newServing(ns, "qwen", 2, 2, 1)
	ms.Spec.Rollout.MaxSurge, ms.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromInt32(0))
	err := kc.Create(context.Background(), ms)
	if err == nil || !strings.Contains(err.Error(), "spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0") {
		t.Fatalf("got %v, want the refusal naming both fields", err)
	}
}

// 7. Scale up and down through the scale subresource; scale-down removes the highest groups.
func TestScaleSubresourceAddsAndRemovesTheHighestGroups(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	ms := newServing(ns, "qwen", 2, 2, 1)
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	scaleTo := func(n int32) {
		t.Helper()
		sc := &autoscalingv1.Scale{}
		if err := kc.SubResource("scale").Get(context.Background(), ms, sc); err != nil {
			t.Fatal(err)
		}
		sc.Spec.Replicas = n
		if err := kc.SubResource("scale").Update(context.Background(), ms, client.WithSubResourceBody(sc)); err != nil {
			t.Fatal(err)
		}
	}
	scaleTo(4)
	t.Logf("scaled 2 -> 4 groups, Ready in %s", waitReady(t, ns, "qwen", settle))
	keep := map[string]types.UID{}
	for _, p := range live(pods(t, ns, "qwen")) {
		if p.Group < 2 {
			keep[p.Name] = p.UID
		}
	}
	scaleTo(2)
	testenv.Eventually(t, settle, "groups 2 and 3 to go", func() (bool, error) {
		ps := pods(t, ns, "qwen")
		for _, p := range ps {
			if p.Group >= 2 {
				return false, fmt.Errorf("%s remains", p.Name)
			}
		}
		return len(ps) == 4, nil
	})
	for _, p := range pods(t, ns, "qwen") {
		if keep[p.Name] != p.UID {
			t.Errorf("scale-down replaced %s; it should remove only the highest groups", p.Name)
		}
	}
	waitReady(t, ns, "qwen", settle)
}

// 8. Groups that cannot get GPUs stay Pending and the status says so. LWS does not gang-schedule:
// leaders take GPUs their workers then lack, so fewer groups come up than the GPUs could hold.
func TestGroupsWithoutGPUsArePendingAndTheStatusSaysWhy(t *testing.T) {
	ns := namespace(t)
	// 3 groups × 2 pods × 8 GPUs = 48 GPUs; the simulated cluster has 4 nodes × 8.
	if err := kc.Create(context.Background(), newServing(ns, "big", 3, 2, 8)); err != nil {
		t.Fatal(err)
	}
	ms := &v1.ModelServing{}
	took := testenv.Eventually(t, settle, "Degraded InsufficientGPU", func() (bool, error) {
		ms = getServing(t, ns, "big")
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Reason == v1.ReasonInsufficientGPU && ms.Status.ReadyReplicas >= 1, fmt.Errorf("status %+v", ms.Status.Conditions)
	})
	t.Logf("the status named the GPU shortage %s after creation: %s ready", took, ms.Status.ReadyGroups)
	readyThen := ms.Status.ReadyReplicas
	testenv.Consistently(t, 2*time.Second, "the groups staying as they are (nothing frees a GPU)", func() error {
		if now := getServing(t, ns, "big").Status.ReadyReplicas; now != readyThen {
			return fmt.Errorf("ready groups went %d -> %d", readyThen, now)
		}
		return nil
	})
	ms = getServing(t, ns, "big")
	c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
	if c.Reason != v1.ReasonInsufficientGPU || !strings.Contains(c.Message, "Insufficient nvidia.com/gpu") || ms.Status.Phase != v1.PhaseDegraded {
		t.Errorf("Degraded %s %q, phase %s; want InsufficientGPU with the scheduler's words and phase Degraded", c.Reason, c.Message, ms.Status.Phase)
	}
	if ms.Status.ReadyReplicas >= 3 {
		t.Fatalf("%d groups ready; the cluster cannot hold 3", ms.Status.ReadyReplicas)
	}
	var pending []string
	for _, g := range ms.Status.Groups {
		if !g.Ready {
			pending = append(pending, fmt.Sprintf("group %d: %s", g.Index, g.Reason))
		}
	}
	if len(pending) == 0 || !strings.Contains(strings.Join(pending, ";"), "Insufficient nvidia.com/gpu") {
		t.Errorf("unready groups in status = %v, want the GPU shortage as their reason", pending)
	}
	if ps := live(pods(t, ns, "big")); readyGroups(ps, 2) != int(ms.Status.ReadyReplicas) {
		t.Errorf("status says %d groups ready, the pods say %d", ms.Status.ReadyReplicas, readyGroups(ps, 2))
	}
	// No gang scheduling: where a group is split (a pod bound, holding its GPUs, while another
	// waits), the status must say so; where no group is split, it must not.
	holding := leadersHoldingGPUs(t, ns, "big")
	says := strings.Contains(c.Message, "hold GPUs while their other pods wait")
	switch {
	case len(holding) > 0 && !says:
		t.Errorf("groups %v hold GPUs while their other pods wait, and the status does not say so: %q", holding, c.Message)
	case len(holding) == 0 && says:
		t.Errorf("no group is split, yet the status says leaders hold GPUs: %q", c.Message)
	default:
		t.Logf("split groups (a pod bound while another waits): %v; status: %s", holding, c.Message)
	}
	if rc := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing); rc != nil && rc.Reason == v1.ReasonRolloutComplete {
		t.Errorf("Progressing claims %s while groups cannot be scheduled", rc.Reason)
	}
}

// leadersHoldingGPUs are the split groups: some pod bound to a node (holding its GPUs) while
// another waits. Either way round: LWS creates the workers once the leader pod exists, bound or
// not, so a group's workers may hold GPUs while its leader waits.
func leadersHoldingGPUs(t *testing.T, ns, name string) []int {
	t.Helper()
	list := &corev1.PodList{}
	if err := kc.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
		t.Fatal(err)
	}
	bound, waiting := map[int]bool{}, map[int]bool{}
	for _, p := range list.Items {
		info, ok := toInfo(p)
		if !ok || info.Deleting {
			continue
		}
		if p.Spec.NodeName != "" {
			bound[info.Group] = true
		} else {
			waiting[info.Group] = true
		}
	}
	var out []int
	for g := range bound {
		if waiting[g] {
			out = append(out, g)
		}
	}
	sort.Ints(out)
	return out
}

// 9. A child with a wrong owner UID is collected by the garbage collector; a serving with a
// finalizer stays while no operator runs and goes once it runs again.
func TestGarbageCollectionAndTheFinalizerWithoutAnOperator(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := newServing(ns, "qwen", 1, 1, 1)
	if err := kc.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: "qwen", UID: "00000000-0000-0000-0000-000000000000",
	}}}}
	if err := kc.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	took := testenv.Eventually(t, settle, "the garbage collector to remove the orphan", func() (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("a child owned by a wrong UID was collected %s after creation", took)

	op.stop()
	restarted := false
	defer func() {
		if !restarted {
			_ = op.start()
		}
	}()
	if err := kc.Delete(ctx, getServing(t, ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // nothing may remove it while no operator runs
	held := getServing(t, ns, "qwen")
	if held.DeletionTimestamp == nil {
		t.Fatal("the serving is not being deleted")
	}
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	took = testenv.Eventually(t, settle, "the serving to go once the operator runs", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen"}, &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("the serving went %s after the operator came back", took)
}

// 10. The operator stopped mid-rollout and started again: the rollout finishes without a duplicate group.
func TestOperatorRestartMidRolloutFinishesWithoutDuplicateGroups(t *testing.T) {
	ns := namespace(t)
	ms := newServing(ns, "qwen", 4, 2, 1)
	ms.Annotations[v1.AnnotationSimulatedLoadDelay] = "3s"
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", 2*settle)
	update(t, ns, "qwen", newImage)
	rev := updateRevision(t, ns, "qwen", getServing(t, ns, "qwen").Generation)
	testenv.Eventually(t, settle, "the rollout to be under way", func() (bool, error) {
		for _, p := range pods(t, ns, "qwen") {
			if p.Revision == rev {
				return true, nil
			}
		}
		return false, nil
	})
	op.stop()
	// A stopped operator removes the certificate directory it made (a laptop's operator left
	// one, its private key included, in the temp directory at every run).
	if left := op.leftInTemp(); len(left) > 0 {
		t.Errorf("the operator stopped by SIGTERM left %v in its TMPDIR", left)
	}
	time.Sleep(2 * time.Second)
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*settle, "the rollout to finish", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		return ms.Status.Phase == v1.PhaseReady && ms.Status.UpdatedReplicas == 4 && ms.Status.CurrentRevision == rev, nil
	})
	groups := map[int]int{}
	for _, p := range live(pods(t, ns, "qwen")) {
		groups[p.Group]++
		if p.Revision != rev {
			t.Errorf("%s still runs %s", p.Name, p.Revision)
		}
	}
	if fmt.Sprint(groups) != "map[0:2 1:2 2:2 3:2]" {
		t.Errorf("groups after the rollout = %v, want exactly groups 0-3 of 2 pods", groups)
	}
}

// Recreate: the old groups are all gone before any group of the new revision starts.
func TestRecreateStopsTheOldGroupsBeforeStartingNewOnes(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	ms := newServing(ns, "qwen", 2, 2, 1)
	ms.Spec.Rollout.Strategy = v1.Recreate
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	oldRev := getServing(t, ns, "qwen").Status.UpdateRevision
	var mu sync.Mutex
	overlap := ""
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			list := &corev1.PodList{}
			if err := kc.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: "qwen"}); err != nil {
				continue
			}
			var old, fresh []string
			for _, p := range list.Items {
				if p.Labels[v1.LabelRevision] == oldRev {
					old = append(old, p.Name)
				} else {
					fresh = append(fresh, p.Name)
				}
			}
			if len(old) > 0 && len(fresh) > 0 {
				mu.Lock()
				overlap = fmt.Sprintf("old %v with new %v", old, fresh)
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	update(t, ns, "qwen", newImage)
	testenv.Eventually(t, 2*settle, "the Recreate rollout to finish", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		return ms.Status.Phase == v1.PhaseReady && ms.Status.ObservedGeneration == ms.Generation && ms.Status.CurrentRevision != oldRev &&
			ms.Status.UpdatedReplicas == 2, nil
	})
	close(stop)
	t.Logf("Recreate of 2 groups took %s", time.Since(start).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	if overlap != "" {
		t.Errorf("Recreate ran old and new pods at once: %s", overlap)
	}
}

// A new restart.id recreates every group through the rollout rules and is reported when done.
func TestANewRestartIDRecreatesEveryGroupAndIsReported(t *testing.T) {
	calmTest(t)
	ns := namespace(t)
	if err := kc.Create(context.Background(), newServing(ns, "qwen", 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "qwen", settle)
	before := map[string]types.UID{}
	for _, p := range live(pods(t, ns, "qwen")) {
		before[p.Name] = p.UID
	}
	rev := getServing(t, ns, "qwen").Status.UpdateRevision
	out, err := kubectlLLM("-n", ns, "restart", "qwen")
	if err != nil {
		t.Fatalf("kubectl llm restart: %v\n%s", err, out)
	}
	id := getServing(t, ns, "qwen").Spec.Restart
	if id == nil || id.ID == "" {
		t.Fatalf("kubectl llm restart set no restart id (%s)", out)
	}
	took := testenv.Eventually(t, 2*settle, "every group restarted and the restart reported", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		return ms.Status.RestartID == id.ID && ms.Status.Phase == v1.PhaseReady, fmt.Errorf("restartID %q phase %s", ms.Status.RestartID, ms.Status.Phase)
	})
	t.Logf("restart of 2 groups done and reported %s after kubectl llm restart", took)
	for _, p := range live(pods(t, ns, "qwen")) {
		if before[p.Name] == p.UID {
			t.Errorf("%s was not restarted", p.Name)
		}
		if p.Revision != rev {
			t.Errorf("%s runs %s: a restart must keep revision %s", p.Name, p.Revision, rev)
		}
	}
}
