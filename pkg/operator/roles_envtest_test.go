package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// pdServing is a serving of 2 prefill and 6 decode groups of 2 pods.
func pdServing(ns, name string) *v1.ModelServing {
	ms := serving(ns, name)
	ms.Spec.Replicas = ptr.To[int32](1)
	ms.Spec.Roles = []v1.RoleSpec{
		{Name: v1.RolePrefill, Replicas: ptr.To[int32](2), GroupSize: ptr.To[int32](2)},
		{Name: v1.RoleDecode, Replicas: ptr.To[int32](6), GroupSize: ptr.To[int32](2)},
	}
	return ms
}

// createRolePods creates the ready pods of groups [0, groups) of a role on revision rev, as LWS
// would (envtest has no LWS controller).
func createRolePods(t *testing.T, ns, serving string, role v1.RoleName, groups int, rev string) {
	t.Helper()
	createRolePodsFor(t, ns, serving, role, groups, rev, "")
}

// createRolePodsFor is createRolePods for pods made from a template stamped with restartID.
func createRolePodsFor(t *testing.T, ns, serving string, role v1.RoleName, groups int, rev, restartID string) {
	t.Helper()
	for g := range groups {
		createRoleGroup(t, ns, serving, role, g, rev, restartID, true)
	}
}

// createRoleGroup creates the 2 pods of group g of a role on revision rev, ready or loading.
func createRoleGroup(t *testing.T, ns, serving string, role v1.RoleName, g int, rev, restartID string, ready bool) {
	t.Helper()
	var annotations map[string]string
	if restartID != "" {
		annotations = map[string]string{v1.AnnotationRestartID: restartID}
	}
	createGroupPods(t, ns, naming.RoleWorkloadName(serving, role), g,
		map[string]string{v1.LabelName: serving, naming.LabelRole: string(role), v1.LabelRevision: rev}, annotations, ready, time.Now())
}

// replaceRoleGroup replaces group g of a role, as LWS does when the partition moves below it:
// the old pods go, the new revision's come up loading.
func replaceRoleGroup(t *testing.T, ns, serving string, role v1.RoleName, g int, rev string) {
	t.Helper()
	deletePods(t, ns, client.MatchingLabels{v1.LabelName: serving, naming.LabelRole: string(role), lwsv1.GroupIndexLabelKey: fmt.Sprint(g)},
		fmt.Sprintf("%s group %d's pods", role, g))
	createRoleGroup(t, ns, serving, role, g, rev, "", false)
}

// markRoleGroupReady makes every pod of group g of a role ready.
func markRoleGroupReady(t *testing.T, ns, serving string, role v1.RoleName, g int) {
	t.Helper()
	markPodsReady(t, ns, client.MatchingLabels{v1.LabelName: serving, naming.LabelRole: string(role), lwsv1.GroupIndexLabelKey: fmt.Sprint(g)})
}

// roleShape is a role LWS's replicas, partition and template revision.
func roleShape(lws *lwsv1.LeaderWorkerSet) string {
	ru := lws.Spec.RolloutStrategy.RollingUpdateConfiguration
	if ru == nil {
		return "no rolling update configuration"
	}
	return fmt.Sprintf("replicas %d partition %d maxSurge %s maxUnavailable %s revision %s", ptr.Deref(lws.Spec.Replicas, -1),
		ptr.Deref(ru.Partition, -1), ru.MaxSurge.String(), ru.MaxUnavailable.String(), revisionLabel(lws))
}

func waitRoleShapes(t *testing.T, ns, what, prefill, decode string) {
	t.Helper()
	var got [2]string
	testenv.Eventually(t, 20*time.Second, what, func() (bool, error) {
		for i, role := range v1.RoleNames() {
			lws, err := getLWS(context.Background(), ns, naming.RoleWorkloadName("qwen", role))
			if err != nil {
				return false, client.IgnoreNotFound(err)
			}
			got[i] = roleShape(lws)
		}
		return got[0] == prefill && got[1] == decode, nil
	})
}

func revisionsOf(t *testing.T, ns string) []appsv1.ControllerRevision {
	t.Helper()
	revs := &appsv1.ControllerRevisionList{}
	if err := env.Client.List(context.Background(), revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return revs.Items
}

func TestRolesRunAsOneLWSAndServicePerRoleMovedByThePlanner(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := pdServing(ns, "qwen")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "the first status", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != "" && len(ms.Status.Roles) == 2
	})
	r1 := first.Status.UpdateRevision
	waitRoleShapes(t, ns, "every role's LWS with all its groups",
		"replicas 2 partition 0 maxSurge 0 maxUnavailable 2 revision "+r1, "replicas 6 partition 0 maxSurge 0 maxUnavailable 6 revision "+r1)
	if _, err := getLWS(ctx, ns, "qwen"); !apierrors.IsNotFound(err) {
		t.Errorf("a serving with roles has a LeaderWorkerSet of its own name (err %v)", err)
	}
	for _, role := range v1.RoleNames() {
		lws, err := getLWS(ctx, ns, naming.RoleWorkloadName("qwen", role))
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(lws); ref == nil || ref.UID != ms.UID || lws.Labels[v1.LabelName] != "qwen" || lws.Labels[naming.LabelRole] != string(role) {
			t.Errorf("LWS %s: owner %+v labels %v", lws.Name, ref, lws.Labels)
		}
		svc := &corev1.Service{}
		key := types.NamespacedName{Namespace: ns, Name: naming.RoleServiceName("qwen", role)}
		testenv.Eventually(t, 10*time.Second, "Service "+key.Name, func() (bool, error) {
			err := env.Client.Get(ctx, key, svc)
			return err == nil, client.IgnoreNotFound(err)
		})
		if svc.Spec.Selector[naming.LabelRole] != string(role) || svc.Spec.Selector[lwsv1.WorkerIndexLabelKey] != "0" {
			t.Errorf("Service %s selects %v, want the role's leaders", svc.Name, svc.Spec.Selector)
		}
	}
	if revs := revisionsOf(t, ns); len(revs) != 1 || revs[0].Name != r1 {
		t.Errorf("revisions %d, want the one revision %s of the topology", len(revs), r1)
	}
	if first.Status.Endpoint != "qwen-decode-api."+ns+".svc:8000" || first.Status.Roles[0].Name != v1.RolePrefill ||
		first.Status.Roles[0].Endpoint != "qwen-prefill-api."+ns+".svc:8000" || first.Status.Roles[1].ReadyGroups != "0/6" {
		t.Errorf("status endpoint %s, roles %+v", first.Status.Endpoint, first.Status.Roles)
	}

	// Every group ready on r1, as LWS would make them.
	createRolePods(t, ns, "qwen", v1.RolePrefill, 2, r1)
	createRolePods(t, ns, "qwen", v1.RoleDecode, 6, r1)
	ready := waitServing(t, ns, "qwen", "every role ready", func(ms *v1.ModelServing) bool {
		return len(ms.Status.Roles) == 2 && ms.Status.Roles[0].ReadyGroups == "2/2" && ms.Status.Roles[1].ReadyGroups == "6/6"
	})
	if c := meta.FindStatusCondition(ready.Status.Conditions, v1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue ||
		ready.Status.ReadyGroups != "8/8" || len(ready.Status.Roles[1].Groups) != 6 {
		t.Errorf("Available %+v, readyGroups %s, decode groups %d", c, ready.Status.ReadyGroups, len(ready.Status.Roles[1].Groups))
	}
	checkRolesScale(t, ready)

	// A new image, paused: one new revision; every role holds (partition = replicas).
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) {
		ms.Spec.Engine.Image = "vllm/vllm-openai:v2"
		ms.Spec.Rollout.Paused = true
	})
	paused := waitServing(t, ns, "qwen", "the paused rollout", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.UpdateRevision != r1 && c != nil && c.Reason == v1.ReasonRolloutPaused
	})
	r2 := paused.Status.UpdateRevision
	waitRoleShapes(t, ns, "every role held by the pause",
		"replicas 2 partition 2 maxSurge 0 maxUnavailable 2 revision "+r2, "replicas 6 partition 6 maxSurge 0 maxUnavailable 6 revision "+r2)
	if revs := revisionsOf(t, ns); len(revs) != 2 {
		t.Errorf("revisions %d, want 2: one per spec change, whatever the roles", len(revs))
	}

	// Resumed: step 1 of 6, one group of each role (the highest index).
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Rollout.Paused = false })
	waitRoleShapes(t, ns, "step 1 of the rollout",
		"replicas 2 partition 1 maxSurge 0 maxUnavailable 2 revision "+r2, "replicas 6 partition 5 maxSurge 0 maxUnavailable 6 revision "+r2)
	rolling := waitServing(t, ns, "qwen", "RollingOut at step 1", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return c != nil && c.Reason == v1.ReasonRollingOut
	})
	if c := meta.FindStatusCondition(rolling.Status.Conditions, v1.ConditionProgressing); !strings.Contains(c.Message, "step 1 of 6") {
		t.Errorf("Progressing %q, want the planner's step", c.Message)
	}

	// Deleting the serving deletes every role's children first.
	if err := env.Client.Delete(ctx, rolling); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the serving and its role children to go", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), &v1.ModelServing{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		for _, role := range v1.RoleNames() {
			if _, err := getLWS(ctx, ns, naming.RoleWorkloadName("qwen", role)); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
			err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.RoleServiceName("qwen", role)}, &corev1.Service{})
			if !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
}

// checkRolesScale checks the scale subresource of a serving with roles, every group of which
// exists: its status counts every role's groups and selects one pod per group (the leaders of
// every role), so what it counts is what it selects; an autoscaler's or kubectl scale's change is
// refused with the command that scales a role.
func checkRolesScale(t *testing.T, ms *v1.ModelServing) {
	t.Helper()
	ctx := context.Background()
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, ms, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	sel, err := labels.Parse(scale.Status.Selector)
	if err != nil {
		t.Fatalf("scale selector %q: %v", scale.Status.Selector, err)
	}
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(ms.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, p := range pods.Items {
		if p.Labels[lwsv1.WorkerIndexLabelKey] != "0" {
			t.Errorf("the scale selector %q selects the worker %s: it counts groups, one pod each", scale.Status.Selector, p.Name)
		}
		roles[p.Labels[naming.LabelRole]]++
	}
	if scale.Status.Replicas != 8 || len(pods.Items) != 8 || roles["prefill"] != 2 || roles["decode"] != 6 {
		t.Errorf("scale status: %d replicas, its selector %q selects %d pods (%v); want 8 groups, the leaders of 2 prefill and 6 decode",
			scale.Status.Replicas, scale.Status.Selector, len(pods.Items), roles)
	}
	scale.Spec.Replicas = 3
	if err := env.Client.SubResource("scale").Update(ctx, ms, client.WithSubResourceBody(scale)); err == nil ||
		!strings.Contains(err.Error(), "kubectl llm scale NAME --role decode --replicas N") {
		t.Errorf("scaling a serving with roles through its scale subresource: got %v, want the refusal naming kubectl llm scale", err)
	}
}

// readyPD creates the 2:6 serving qwen with every group ready on its first revision, which it
// returns.
func readyPD(t *testing.T, ns string) string {
	t.Helper()
	if err := env.Client.Create(context.Background(), pdServing(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "the first status", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != ""
	})
	r1 := first.Status.UpdateRevision
	createRolePods(t, ns, "qwen", v1.RolePrefill, 2, r1)
	createRolePods(t, ns, "qwen", v1.RoleDecode, 6, r1)
	return r1
}

func TestARoleRestartRestartsThatRoleAloneAndIsReportedDone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	r1 := readyPD(t, ns)
	waitServing(t, ns, "qwen", "every group ready", func(ms *v1.ModelServing) bool { return ms.Status.ReadyGroups == "8/8" })
	prefillBefore := waitLWS(t, ns, "qwen-prefill", func(*lwsv1.LeaderWorkerSet) bool { return true })

	// kubectl llm restart qwen --role decode: decode's template gets its restart id, and decode
	// alone moves by its own limits (one group: step 1 of 6); prefill's LWS is not written.
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Roles[1].Restart = &v1.RoleRestartSpec{ID: "d1"} })
	waitRoleShapes(t, ns, "decode's first group restarting, prefill untouched",
		"replicas 2 partition 0 maxSurge 0 maxUnavailable 2 revision "+r1, "replicas 6 partition 5 maxSurge 0 maxUnavailable 6 revision "+r1)
	decode := waitLWS(t, ns, "qwen-decode", func(*lwsv1.LeaderWorkerSet) bool { return true })
	if id := decode.Spec.LeaderWorkerTemplate.LeaderTemplate.Annotations[v1.AnnotationRestartID]; id != v1.RoleRestartID("", "d1") {
		t.Errorf("decode leader template restart id %q, want %q", id, v1.RoleRestartID("", "d1"))
	}
	restarting := waitServing(t, ns, "qwen", "Restarting", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return c != nil && c.Reason == v1.ReasonRestarting
	})
	if c := meta.FindStatusCondition(restarting.Status.Conditions, v1.ConditionProgressing); !strings.Contains(c.Message, "step 1 of 6") {
		t.Errorf("Progressing %q, want decode's own step", c.Message)
	}
	if restarting.Status.Roles[1].RestartID != "" {
		t.Errorf("decode restart reported done (%q) before any group restarted", restarting.Status.Roles[1].RestartID)
	}
	prefillNow := waitLWS(t, ns, "qwen-prefill", func(*lwsv1.LeaderWorkerSet) bool { return true })
	if prefillNow.ResourceVersion != prefillBefore.ResourceVersion {
		t.Errorf("prefill's LWS was written by decode's restart (resourceVersion %s -> %s)", prefillBefore.ResourceVersion, prefillNow.ResourceVersion)
	}

	// Every decode group recreated for d1 (as LWS would, one at a time): reported done, for
	// decode only.
	if err := env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{naming.LabelRole: "decode"},
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "decode's pods gone", func() (bool, error) {
		list := &corev1.PodList{}
		err := env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{naming.LabelRole: "decode"})
		return err == nil && len(list.Items) == 0, err
	})
	createRolePodsFor(t, ns, "qwen", v1.RoleDecode, 6, r1, v1.RoleRestartID("", "d1"))
	done := waitServing(t, ns, "qwen", "decode's restart reported done", func(ms *v1.ModelServing) bool {
		return len(ms.Status.Roles) == 2 && ms.Status.Roles[1].RestartID == "d1" && ms.Status.ReadyGroups == "8/8"
	})
	if done.Status.Roles[0].RestartID != "" || done.Status.RestartID != "" {
		t.Errorf("restart ids prefill %q, serving %q; want none: only decode was restarted", done.Status.Roles[0].RestartID, done.Status.RestartID)
	}
	waitRoleShapes(t, ns, "every role back to partition 0",
		"replicas 2 partition 0 maxSurge 0 maxUnavailable 2 revision "+r1, "replicas 6 partition 0 maxSurge 0 maxUnavailable 6 revision "+r1)
}

func TestARoleChildThatIsNotOursIsLeftAloneAndReported(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: naming.RoleServiceName("qwen", v1.RolePrefill), Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := env.Client.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, pdServing(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	got := waitServing(t, ns, "qwen", "Degraded/NameConflict", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Reason == v1.ReasonNameConflict
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDegraded); !strings.Contains(c.Message, "Service qwen-prefill-api") {
		t.Errorf("Degraded %q does not name the Service", c.Message)
	}
	// Only that child is held back: both LWSs and the decode Service are made.
	for _, name := range []string{"qwen-prefill", "qwen-decode"} {
		waitLWS(t, ns, name, func(*lwsv1.LeaderWorkerSet) bool { return true })
	}
	testenv.Eventually(t, 10*time.Second, "the decode Service", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-decode-api"}, &corev1.Service{})
		return err == nil, client.IgnoreNotFound(err)
	})
	after := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mine), after); err != nil || after.ResourceVersion != mine.ResourceVersion {
		t.Errorf("the user's Service was touched (err %v, resourceVersion %s -> %s)", err, mine.ResourceVersion, after.ResourceVersion)
	}
}

// waitPlan waits for status.plan to be want (the serving's observed generation current).
func waitPlan(t *testing.T, ns, what string, want v1.PlanStatus) *v1.ModelServing {
	t.Helper()
	var last *v1.PlanStatus
	defer func() {
		if t.Failed() {
			t.Logf("last status.plan %+v, want %+v", last, want)
		}
	}()
	return waitServing(t, ns, "qwen", what, func(ms *v1.ModelServing) bool {
		last = ms.Status.Plan
		return ms.Status.ObservedGeneration == ms.Generation && last != nil && cmp.Equal(*last, want)
	})
}

// TestStatusPlanFollowsTheRolesRollout: the operator reports the planner's step in status.plan,
// which moves as the step's new groups become ready, and a converged serving's plan is not
// rewritten.
func TestStatusPlanFollowsTheRolesRollout(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	r1 := readyPD(t, ns)
	targets := func(pu, pr, du, dr int32) []v1.RolePlanTarget {
		return []v1.RolePlanTarget{{Name: v1.RolePrefill, Replicas: pr, UpdatedReplicas: pu}, {Name: v1.RoleDecode, Replicas: dr, UpdatedReplicas: du}}
	}
	converged := waitPlan(t, ns, "the plan of a converged serving", v1.PlanStatus{Revision: r1, State: v1.PlanComplete, Roles: targets(2, 2, 6, 6)})

	// Converged: passes (a pod's annotation changes, which the operator watches) write nothing.
	pod := &corev1.Pod{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-decode-0"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{"example.com/touched": "1"}
	if err := env.Client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Consistently(t, 2*time.Second, "the converged serving's status left alone", func() error {
		again := &v1.ModelServing{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(converged), again); err != nil {
			return err
		}
		if again.ResourceVersion != converged.ResourceVersion {
			return fmt.Errorf("the serving was written (%s -> %s): plan %+v", converged.ResourceVersion, again.ResourceVersion, again.Status.Plan)
		}
		return nil
	})

	// A new image: step 1 of 6 moves the highest group of each role.
	updateServing(t, ns, "qwen", func(ms *v1.ModelServing) { ms.Spec.Engine.Image = "vllm/vllm-openai:v2" })
	moving := waitServing(t, ns, "qwen", "the new revision", func(ms *v1.ModelServing) bool {
		return ms.Status.UpdateRevision != r1 && ms.Status.ObservedGeneration == ms.Generation
	})
	r2 := moving.Status.UpdateRevision
	waitPlan(t, ns, "step 1 applied", v1.PlanStatus{Revision: r2, Step: 1, Steps: 6, State: v1.PlanProgressing, Roles: targets(1, 2, 1, 6)})

	// LWS replaces those groups; while they load the plan waits for them.
	replaceRoleGroup(t, ns, "qwen", v1.RolePrefill, 1, r2)
	replaceRoleGroup(t, ns, "qwen", v1.RoleDecode, 5, r2)
	waitPlan(t, ns, "step 1 waiting", v1.PlanStatus{Revision: r2, Step: 1, Steps: 6, State: v1.PlanWaiting,
		Message: "prefill: 0 of 1 new groups ready; decode: 0 of 1 new groups ready", Roles: targets(1, 2, 1, 6)})
	// Prefill's is ready: the plan still waits, for decode alone.
	markRoleGroupReady(t, ns, "qwen", v1.RolePrefill, 1)
	waitPlan(t, ns, "step 1 waiting for decode", v1.PlanStatus{Revision: r2, Step: 1, Steps: 6, State: v1.PlanWaiting,
		Message: "decode: 0 of 1 new groups ready", Roles: targets(1, 2, 1, 6)})
	// Decode's too: step 2 (a second decode group; prefill's share is still one group).
	markRoleGroupReady(t, ns, "qwen", v1.RoleDecode, 5)
	waitPlan(t, ns, "step 2", v1.PlanStatus{Revision: r2, Step: 2, Steps: 6, State: v1.PlanProgressing, Roles: targets(1, 2, 2, 6)})
	waitRoleShapes(t, ns, "step 2 applied",
		"replicas 2 partition 1 maxSurge 0 maxUnavailable 2 revision "+r2, "replicas 6 partition 4 maxSurge 0 maxUnavailable 6 revision "+r2)
}
