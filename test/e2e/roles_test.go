package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// newPDServing is a serving of prefill and decode groups of size pods, one GPU each.
func newPDServing(ns, name string, prefill, decode, size int32) *v1.ModelServing {
	ms := newServing(ns, name, 1, size, 1)
	ms.Spec.Roles = []v1.RoleSpec{
		{Name: v1.RolePrefill, Replicas: ptr.To(prefill), GroupSize: ptr.To(size)},
		{Name: v1.RoleDecode, Replicas: ptr.To(decode), GroupSize: ptr.To(size)},
	}
	return ms
}

// ratioWatch checks, on every event of the serving's pods, that the roles' updated-and-ready
// shares are within one planned step of each other (roleplan.InStep) for the revision rev.
type ratioWatch struct {
	mu         sync.Mutex
	events     int
	violations []string
	// most is the highest count of ready groups on rev seen per role, to show the rollout moved;
	// least the lowest count of ready groups on any revision, what the role served throughout.
	most, least map[v1.RoleName]int32
	stop        chan struct{}
}

func watchRatio(t *testing.T, ms *v1.ModelServing, rev string) *ratioWatch {
	t.Helper()
	w := &ratioWatch{stop: make(chan struct{}), most: map[v1.RoleName]int32{}, least: map[v1.RoleName]int32{}}
	inf := podInformer(t, ms.Namespace, ms.Name)
	roles, err := roleplan.RolesOf(ms.Spec)
	if err != nil {
		t.Fatal(err)
	}
	check := func(any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		var all []corev1.Pod
		for _, o := range inf.GetStore().List() {
			all = append(all, *o.(*corev1.Pod))
		}
		in := roleplan.Input{Roles: append([]roleplan.Role(nil), roles...)}
		var shape []string
		for i := range in.Roles {
			r := &in.Roles[i]
			var mine []corev1.Pod
			for _, p := range all {
				if p.Labels[naming.LabelRole] == string(r.Name) {
					mine = append(mine, p)
				}
			}
			readyAny := int32(0)
			spec, _ := ms.Spec.ForRole(r.Name)
			for _, g := range status.BuildGroups(mine, 0, int(spec.GroupSize), time.Now()) {
				if g.Ready() {
					readyAny++
				}
				switch {
				case g.Updated(rev, "") && g.Ready():
					r.Updated++
					r.ReadyUpdated++
				case g.Updated(rev, ""):
					r.Updated++
				default:
					r.Old++
				}
			}
			w.most[r.Name] = max(w.most[r.Name], r.ReadyUpdated)
			if l, ok := w.least[r.Name]; !ok || readyAny < l {
				w.least[r.Name] = readyAny
			}
			shape = append(shape, fmt.Sprintf("%s %d/%d ready new", r.Name, r.ReadyUpdated, r.Desired))
		}
		if !roleplan.InStep(in) {
			w.violations = append(w.violations, fmt.Sprintf("event %d: %s", w.events, strings.Join(shape, ", ")))
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: check, UpdateFunc: func(_, o any) { check(o) }, DeleteFunc: check,
	}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(w.stop)
	if !toolscache.WaitForCacheSync(w.stop, inf.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	t.Cleanup(func() { close(w.stop) })
	return w
}

// rolePods are the live pods of one role of a serving, by name.
func rolePods(t *testing.T, ns, name string, role v1.RoleName) map[string]types.UID {
	t.Helper()
	list := &corev1.PodList{}
	if err := kc.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name, naming.LabelRole: string(role)}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.UID
		}
	}
	return out
}

// A 2 prefill : 6 decode serving (groups of 2 pods, 1 GPU each) becomes Ready; a new image rolls
// out with the roles' ratio kept on every pod event, and never fewer ready groups of a role than
// its maxUnavailable allows (with surge: new capacity before old goes); a worker lost in a
// prefill group recreates that group alone.
func TestRolesPrefillDecodeRolloutKeepsTheRatio(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		maxSurge, unavailable int32
	}{
		{"maxSurge 0, maxUnavailable 1", 0, 1},
		{"maxSurge 1, maxUnavailable 0", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { rolesRollout(t, intstr.FromInt32(tc.maxSurge), intstr.FromInt32(tc.unavailable)) })
	}
	t.Run("a GPU shortage in prefill holds decode", rolesShortage)
}

// rolesShortage: prefill groups are one pod of 4 GPUs in zone a (two nodes of 8), whose spare
// GPUs two blocker pods then take; decode groups two pods of one GPU in zone b, which has room for
// more. With maxSurge 1 the decode surge group fits and the prefill one cannot: decode must wait
// at step 1 instead of running ahead, and the status must say which role holds it. A blocker
// deleted frees a group's GPUs: the rollout then completes, the ratio kept on every event.
func rolesShortage(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := newPDServing(ns, "qwen", 2, 6, 2)
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	ms.Spec.Rollout.MaxSurge, ms.Spec.Rollout.MaxUnavailable = &surge, &unavailable
	zoneA := map[string]string{"topology.kubernetes.io/zone": "sim-region-1a"}
	ms.Spec.Roles[0].GroupSize, ms.Spec.Roles[0].Resources.GPUs = ptr.To[int32](1), ptr.To[int32](4)
	ms.Spec.Roles[0].Scheduling.NodeSelector = zoneA
	ms.Spec.Roles[1].Scheduling.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "sim-region-1b"}
	if err := kc.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 prefill groups (4 GPUs) + 6 decode groups Ready in %s", waitReady(t, ns, "qwen", settle))
	var blockers []*corev1.Pod
	for i := range 2 {
		b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("blocker-%d", i), Namespace: ns}, Spec: corev1.PodSpec{
			NodeSelector: zoneA,
			Containers: []corev1.Container{{Name: "other", Image: "other-team/trainer", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{sim.GPUResource: resource.MustParse("4")},
				Limits:   corev1.ResourceList{sim.GPUResource: resource.MustParse("4")},
			}}},
		}}
		if err := kc.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		blockers = append(blockers, b)
	}
	testenv.Eventually(t, settle, "the blockers to take zone a's spare GPUs", func() (bool, error) {
		for _, b := range blockers {
			got := &corev1.Pod{}
			if err := kc.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil || got.Spec.NodeName == "" {
				return false, fmt.Errorf("%s not scheduled (%v)", b.Name, err)
			}
		}
		return true, nil
	})
	next := getServing(t, ns, "qwen").DeepCopy()
	next.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1"
	rev := revisionOf(t, next)
	ratio := watchRatio(t, next, rev)
	update(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1" })
	var held *v1.ModelServing
	took := testenv.Eventually(t, settle, "prefill's surge group short of GPUs, named in the status", func() (bool, error) {
		held = getServing(t, ns, "qwen")
		d := meta.FindStatusCondition(held.Status.Conditions, v1.ConditionDegraded)
		ratio.mu.Lock()
		decodeNew := ratio.most[v1.RoleDecode]
		ratio.mu.Unlock()
		return d != nil && d.Reason == v1.ReasonInsufficientGPU && strings.HasPrefix(d.Message, "prefill: ") && decodeNew == 1,
			fmt.Errorf("Degraded %+v, decode %d ready new groups", d, decodeNew)
	})
	t.Logf("prefill short of GPUs and decode's step-1 group ready %s after the change", took)
	time.Sleep(10 * time.Second) // long enough for decode to run ahead, were it let
	held = getServing(t, ns, "qwen")
	p := meta.FindStatusCondition(held.Status.Conditions, v1.ConditionProgressing)
	if d := meta.FindStatusCondition(held.Status.Conditions, v1.ConditionDegraded); d != nil && p != nil {
		t.Logf("Degraded %s: %s", d.Reason, d.Message)
		t.Logf("Progressing %s: %s", p.Reason, p.Message)
	}
	if p == nil || !strings.Contains(p.Message, "waiting for prefill: 0 of 1 new groups ready") {
		t.Errorf("Progressing %+v: want it to say prefill holds the rollout", p)
	}
	for role, want := range map[v1.RoleName]string{v1.RolePrefill: "replicas 3 partition 2", v1.RoleDecode: "replicas 7 partition 6"} {
		lws := &lwsv1.LeaderWorkerSet{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.RoleWorkloadName("qwen", role)}, lws); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("replicas %d partition %d", ptr.Deref(lws.Spec.Replicas, -1), ptr.Deref(lws.Spec.RolloutStrategy.RollingUpdateConfiguration.Partition, -1))
		if got != want {
			t.Errorf("%s LWS %s, want %s (step 1: its surge group only)", role, got, want)
		}
	}
	ratio.mu.Lock()
	if ratio.most[v1.RoleDecode] != 1 || len(ratio.violations) > 0 {
		t.Errorf("decode reached %d ready new groups while prefill had none; %d events out of step", ratio.most[v1.RoleDecode], len(ratio.violations))
	}
	t.Logf("held for 10 s: decode %d ready new group, prefill %d; %d pod events checked", ratio.most[v1.RoleDecode], ratio.most[v1.RolePrefill], ratio.events)
	ratio.mu.Unlock()

	// One blocker gone: a prefill group's GPUs are free, and the rollout completes.
	if err := kc.Delete(ctx, blockers[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	t.Logf("GPUs freed: every group on the new revision in %s", waitOnRevision(t, ns, rev, 2+12, "the rollout to complete once GPUs are free"))
	ratioReport(t, "GPU shortage, then GPUs freed", ratio)
}

func rolesRollout(t *testing.T, surge, unavailable intstr.IntOrString) {
	ctx := context.Background()
	ns := namespace(t)
	ms := newPDServing(ns, "qwen", 2, 6, 2)
	ms.Spec.Rollout.MaxSurge, ms.Spec.Rollout.MaxUnavailable = &surge, &unavailable
	if err := kc.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 prefill + 6 decode groups × 2 pods Ready in %s", waitReady(t, ns, "qwen", settle))
	ready := getServing(t, ns, "qwen")
	if len(ready.Status.Roles) != 2 || ready.Status.Roles[0].ReadyGroups != "2/2" || ready.Status.Roles[1].ReadyGroups != "6/6" || ready.Status.ReadyGroups != "8/8" {
		t.Fatalf("status roles %+v, readyGroups %s", ready.Status.Roles, ready.Status.ReadyGroups)
	}
	if n := len(pods(t, ns, "qwen")); n != 16 {
		t.Fatalf("%d pods, want 16", n)
	}

	// A new image: the revision it makes, watched on every pod event from before the change.
	next := ready.DeepCopy()
	next.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1"
	spec, err := revision.SpecOf(next.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rev := revision.Name("qwen", spec)
	ratio := watchRatio(t, next, rev)
	update(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1" })
	took := waitOnRevision(t, ns, rev, 16, "the rollout to complete")
	ratio.mu.Lock()
	events, violations, most, least := ratio.events, append([]string(nil), ratio.violations...), maps.Clone(ratio.most), maps.Clone(ratio.least)
	ratio.mu.Unlock()
	t.Logf("rollout of 2+6 groups completed in %s; the ratio was checked on %d pod events", took, events)
	if most[v1.RolePrefill] < 2 || most[v1.RoleDecode] < 6 {
		t.Errorf("the watch saw at most %v ready groups on the new revision, want 2 and 6 (or more, with surge): it missed the rollout", most)
	}
	t.Logf("fewest ready groups during the rollout: prefill %d of 2, decode %d of 6", least[v1.RolePrefill], least[v1.RoleDecode])
	for role, desired := range map[v1.RoleName]int32{v1.RolePrefill: 2, v1.RoleDecode: 6} {
		if floor := desired - int32(unavailable.IntValue()); least[role] < floor {
			t.Errorf("%s had %d ready groups at one event, fewer than replicas - maxUnavailable = %d", role, least[role], floor)
		}
	}
	if len(violations) > 0 {
		t.Errorf("the roles' ready shares were more than one step apart on %d of %d events, first: %s", len(violations), events, violations[0])
	}

	// A worker lost in prefill group 0: that group alone is recreated.
	prefillBefore, decodeBefore := rolePods(t, ns, "qwen", v1.RolePrefill), rolePods(t, ns, "qwen", v1.RoleDecode)
	deletePod(t, ns, "qwen-prefill-0-1")
	took = testenv.Eventually(t, settle, "prefill group 0 recreated and every group ready", func() (bool, error) {
		now := rolePods(t, ns, "qwen", v1.RolePrefill)
		for _, n := range []string{"qwen-prefill-0", "qwen-prefill-0-1"} {
			if uid, ok := now[n]; !ok || uid == prefillBefore[n] {
				return false, fmt.Errorf("%s not recreated yet", n)
			}
		}
		ms := getServing(t, ns, "qwen")
		return ms.Status.Phase == v1.PhaseReady && ms.Status.ReadyGroups == "8/8", fmt.Errorf("phase %s, %s ready", ms.Status.Phase, ms.Status.ReadyGroups)
	})
	t.Logf("prefill group 0 recreated and ready %s after its worker was deleted", took)
	now := rolePods(t, ns, "qwen", v1.RolePrefill)
	for _, n := range []string{"qwen-prefill-1", "qwen-prefill-1-1"} {
		if now[n] != prefillBefore[n] {
			t.Errorf("prefill pod %s was recreated; only group 0 should be", n)
		}
	}
	for n, uid := range rolePods(t, ns, "qwen", v1.RoleDecode) {
		if decodeBefore[n] != uid {
			t.Errorf("decode pod %s was recreated by a prefill worker's loss", n)
		}
	}
}

// snapshot is the live pods of a serving by name (UID and revision), once none is being
// deleted or unready: what "nothing moves" compares.
func settledPods(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var out map[string]string
	testenv.Eventually(t, settle, "every pod of "+name+" ready and none deleting", func() (bool, error) {
		out = map[string]string{}
		for _, p := range pods(t, ns, name) {
			if p.Deleting || !p.Ready {
				return false, fmt.Errorf("pod %s deleting %v ready %v", p.Name, p.Deleting, p.Ready)
			}
			out[p.Name] = string(p.UID) + " " + p.Revision
		}
		return true, nil
	})
	return out
}

// ratioReport fails the test when the watch saw the roles out of step, and logs what it checked.
func ratioReport(t *testing.T, what string, w *ratioWatch) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%s: the ratio was checked on %d pod events", what, w.events)
	if len(w.violations) > 0 {
		t.Errorf("%s: the roles' ready shares were more than one step apart on %d of %d events, first: %s", what, len(w.violations), w.events, w.violations[0])
	}
}

// waitOnRevision waits until the serving qwen's n pods are all ready on rev and the status says so.
func waitOnRevision(t *testing.T, ns, rev string, n int, what string) time.Duration {
	t.Helper()
	return testenv.Eventually(t, 2*settle, what, func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		onRev := 0
		for _, p := range live(pods(t, ns, "qwen")) {
			if p.Revision == rev && p.Ready {
				onRev++
			}
		}
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Phase == v1.PhaseReady && ms.Status.CurrentRevision == rev &&
			onRev == n, fmt.Errorf("phase %s, current %s, %d of %d pods ready on %s", ms.Status.Phase, ms.Status.CurrentRevision, onRev, n, rev)
	})
}

// revisionOf is the revision name the operator gives a spec.
func revisionOf(t *testing.T, ms *v1.ModelServing) string {
	t.Helper()
	spec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return revision.Name(ms.Name, spec)
}

// readyPDServing creates the 2:6 serving qwen (groups of 2 pods) in a new namespace, which it
// returns once the serving is Ready.
func readyPDServing(t *testing.T) string {
	t.Helper()
	ns := namespace(t)
	if err := kc.Create(context.Background(), newPDServing(ns, "qwen", 2, 6, 2)); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 prefill + 6 decode groups Ready in %s", waitReady(t, ns, "qwen", settle))
	return ns
}

// One 2:6 serving (groups of 2 pods) through what a single-role serving does, across roles, with
// the ratio checked on every pod event: a canary of one group per role held, then paused and
// promoted (nothing moves while paused), resumed to the end; undone to the previous revision;
// and decode restarted alone (kubectl llm restart --role), prefill untouched.
func TestRolesCanaryPauseUndoAndRoleRestart(t *testing.T) {
	ns := readyPDServing(t)
	rev1 := getServing(t, ns, "qwen").Status.CurrentRevision

	// Canary: the new image on one group of each role (each role's partition), held.
	next := getServing(t, ns, "qwen").DeepCopy()
	next.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1"
	rev2 := revisionOf(t, next)
	ratio := watchRatio(t, next, rev2)
	update(t, ns, "qwen", func(ms *v1.ModelServing) {
		ms.Spec.Engine.Image = "vllm/vllm-openai:v0.11.1"
		ms.Spec.Roles[0].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](1)}
		ms.Spec.Roles[1].Rollout = &v1.RoleRolloutSpec{Partition: ptr.To[int32](5)}
	})
	took := testenv.Eventually(t, settle, "the canary held with one new group of each role", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		ratio.mu.Lock()
		p, d := ratio.most[v1.RolePrefill], ratio.most[v1.RoleDecode]
		ratio.mu.Unlock()
		return c != nil && c.Reason == v1.ReasonCanaryHeld && p == 1 && d == 1, fmt.Errorf("Progressing %+v; ready new prefill %d, decode %d", c, p, d)
	})
	t.Logf("canary of 1 prefill + 1 decode group held %s after the change", took)
	held := settledPods(t, ns, "qwen")
	time.Sleep(5 * time.Second) // long enough for the rollout to go on, were it let
	if now := settledPods(t, ns, "qwen"); !maps.Equal(held, now) {
		t.Errorf("pods changed while the canary held:\nbefore %v\nafter  %v", held, now)
	}

	// Paused, then promoted: nothing of either role moves until resumed.
	if out, err := kubectlLLM("-n", ns, "rollout", "pause", "qwen"); err != nil {
		t.Fatalf("rollout pause: %v\n%s", err, out)
	}
	update(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Roles[0].Rollout, ms.Spec.Roles[1].Rollout = nil, nil })
	testenv.Eventually(t, settle, "the promoted rollout reported paused", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Reason == v1.ReasonRolloutPaused, fmt.Errorf("Progressing %+v", c)
	})
	time.Sleep(5 * time.Second)
	if now := settledPods(t, ns, "qwen"); !maps.Equal(held, now) {
		t.Errorf("pods changed while paused:\nbefore %v\nafter  %v", held, now)
	}
	if out, err := kubectlLLM("-n", ns, "rollout", "resume", "qwen"); err != nil {
		t.Fatalf("rollout resume: %v\n%s", err, out)
	}
	t.Logf("resumed: every group on the new revision in %s", waitOnRevision(t, ns, rev2, 16, "the resumed rollout to complete"))
	ratioReport(t, "canary, pause, promote, resume", ratio)

	// Undo: back to the previous revision, every role together.
	back := watchRatio(t, getServing(t, ns, "qwen"), rev1)
	if out, err := kubectlLLM("-n", ns, "rollout", "undo", "qwen"); err != nil {
		t.Fatalf("rollout undo: %v\n%s", err, out)
	}
	t.Logf("undone: every group back on %s in %s", rev1, waitOnRevision(t, ns, rev1, 16, "the undo to complete"))
	ratioReport(t, "undo", back)

	// kubectl llm restart --role decode: every decode group recreated, no prefill pod.
	prefillBefore, decodeBefore := rolePods(t, ns, "qwen", v1.RolePrefill), rolePods(t, ns, "qwen", v1.RoleDecode)
	if out, err := kubectlLLM("-n", ns, "restart", "qwen", "--role", "decode"); err != nil {
		t.Fatalf("restart --role decode: %v\n%s", err, out)
	}
	took = testenv.Eventually(t, 2*settle, "decode restarted, reported in status.roles", func() (bool, error) {
		ms := getServing(t, ns, "qwen")
		d := ms.Spec.Role(v1.RoleDecode)
		return d.Restart != nil && len(ms.Status.Roles) == 2 && ms.Status.Roles[1].RestartID == d.Restart.ID && ms.Status.Phase == v1.PhaseReady,
			fmt.Errorf("phase %s, roles %+v", ms.Status.Phase, ms.Status.Roles)
	})
	t.Logf("decode restarted alone in %s", took)
	for n, uid := range rolePods(t, ns, "qwen", v1.RoleDecode) {
		if decodeBefore[n] == uid {
			t.Errorf("decode pod %s was not recreated by decode's restart", n)
		}
	}
	if now := rolePods(t, ns, "qwen", v1.RolePrefill); !maps.Equal(prefillBefore, now) {
		t.Errorf("prefill pods changed by decode's restart:\nbefore %v\nafter  %v", prefillBefore, now)
	}
}

// kubectlLLMCode runs the binary under test and returns its output and exit code.
func kubectlLLMCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := kubectlLLM(args...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case errors.As(err, &exit):
		return out, exit.ExitCode()
	}
	t.Fatalf("kubectl llm %s: %v", strings.Join(args, " "), err)
	return "", 0
}

// A canary of the whole topology driven through the built binary, the way a user would: kubectl
// llm canary --groups 1 puts one group of each role on the new image, rollout status reports the
// hold (exit 0, each role's partition named), canary promote rolls the rest and rollout status
// waits for the end; a second canary is aborted and every pod is back on the old revision. The
// roles' ratio is checked on every pod event for the revision the canary brings.
func TestRolesCanaryThroughTheCLI(t *testing.T) {
	ns := readyPDServing(t)
	canary := func(image string) (string, *ratioWatch) {
		t.Helper()
		next := getServing(t, ns, "qwen").DeepCopy()
		next.Spec.Engine.Image = image
		rev := revisionOf(t, next)
		w := watchRatio(t, next, rev)
		if out, code := kubectlLLMCode(t, "-n", ns, "canary", "qwen", "--image", image, "--groups", "1"); code != 0 {
			t.Fatalf("canary --image %s --groups 1: exit %d\n%s", image, code, out)
		}
		start := time.Now()
		out, code := kubectlLLMCode(t, "-n", ns, "rollout", "status", "qwen", "--timeout", "60s")
		if code != 0 || !strings.Contains(out, "canary is ready and held at prefill partition 1, decode partition 5") {
			t.Fatalf("rollout status of the held canary: exit %d, want 0 naming each role's partition:\n%s", code, out)
		}
		t.Logf("canary of %s held (rollout status returned) in %s", image, time.Since(start).Round(time.Millisecond))
		ms := getServing(t, ns, "qwen")
		if pl := ms.Status.Plan; pl == nil || pl.State != v1.PlanCanaryHeld || pl.Step != 1 || pl.Revision != rev {
			t.Errorf("status.plan of the held canary %+v, want CanaryHeld at step 1 on %s", pl, rev)
		}
		w.mu.Lock()
		p, d := w.most[v1.RolePrefill], w.most[v1.RoleDecode]
		w.mu.Unlock()
		if p != 1 || d != 1 {
			t.Errorf("ready new groups seen: prefill %d, decode %d; want the canary's 1 and 1", p, d)
		}
		return rev, w
	}

	rev2, ratio := canary("vllm/vllm-openai:v0.11.1")
	if out, code := kubectlLLMCode(t, "-n", ns, "canary", "promote", "qwen"); code != 0 {
		t.Fatalf("canary promote: exit %d\n%s", code, out)
	}
	start := time.Now()
	out, code := kubectlLLMCode(t, "-n", ns, "rollout", "status", "qwen", "--timeout", "120s")
	if code != 0 || !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status of the promoted canary: exit %d\n%s", code, out)
	}
	t.Logf("promoted: rollout status returned in %s", time.Since(start).Round(time.Millisecond))
	waitOnRevision(t, ns, rev2, 16, "every pod on the promoted revision")
	ratioReport(t, "canary and promote", ratio)

	rev3, ratio := canary("vllm/vllm-openai:v0.11.2")
	if out, code := kubectlLLMCode(t, "-n", ns, "canary", "abort", "qwen"); code != 0 {
		t.Fatalf("canary abort: exit %d\n%s", code, out)
	}
	if out, code := kubectlLLMCode(t, "-n", ns, "rollout", "status", "qwen", "--timeout", "120s"); code != 0 || !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status of the aborted canary: exit %d\n%s", code, out)
	}
	t.Logf("aborted: every pod back on %s in %s", rev2, waitOnRevision(t, ns, rev2, 16, "every pod back on the old revision"))
	for _, p := range live(pods(t, ns, "qwen")) {
		if p.Revision == rev3 {
			t.Errorf("pod %s still on the aborted canary's revision %s", p.Name, rev3)
		}
	}
	ratioReport(t, "canary and abort", ratio)
}
