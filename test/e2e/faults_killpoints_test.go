package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// killCase stops the operator at a failpoint: the process exits at a named point of the code path
// the trigger sets off (failpoint.ExitCode, no cleanup, as a SIGKILL there would), then a fresh
// operator must finish the job.
type killCase struct {
	name, point string
	// recreate makes the starting serving use the Recreate strategy.
	recreate bool
	// fresh: the trigger creates the serving (there is none before).
	fresh bool
	// prepare runs with the normal operator before the one with the failpoint starts.
	prepare func(t *testing.T, ns, name string)
	trigger func(t *testing.T, ns, name string)
	// after runs once the operator is back, before the invariants (scale back up, say).
	after func(t *testing.T, ns, name string)
	// deleted: the trigger deletes the serving; what is checked is that nothing of it is left.
	deleted bool
}

func scaleTo(n int32) func(*testing.T, string, string) {
	return func(t *testing.T, ns, name string) {
		update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To(n) })
	}
}

func startCanary(t *testing.T, ns, name string) {
	update(t, ns, name, func(ms *v1.ModelServing) { newImage(ms); ms.Spec.Rollout.Partition = ptr.To[int32](1) })
}

// waitCanaryHeld waits until the canary group is ready and the rollout holds at the partition.
func waitCanaryHeld(t *testing.T, ns, name string) {
	testenv.Eventually(t, settle, "the canary to hold at partition 1", func() (bool, error) {
		ms := getServing(t, ns, name)
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.ObservedGeneration == ms.Generation && c != nil && c.Reason == v1.ReasonCanaryHeld && ms.Status.ReadyReplicas == 2, nil
	})
}

func cli(args ...string) func(*testing.T, string, string) {
	return func(t *testing.T, ns, name string) {
		if out, err := kubectlLLM(append(args, name, "-n", ns)...); err != nil {
			t.Fatalf("kubectl llm %v: %v\n%s", args, err, out)
		}
	}
}

// waitNoGroups waits until the serving has no pods left.
func waitNoGroups(t *testing.T, ns, name string) {
	testenv.Eventually(t, settle, "no groups left", func() (bool, error) {
		return len(pods(t, ns, name)) == 0, nil
	})
}

func TestFaultsKillPoints(t *testing.T) {
	create := func(t *testing.T, ns, name string) {
		if err := kc.Create(context.Background(), newServing(ns, name, 2, 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	del := func(t *testing.T, ns, name string) {
		if err := kc.Delete(context.Background(), &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []killCase{
		{name: "create: after the finalizer, before any child", point: "after-finalizer", fresh: true, trigger: create},
		{name: "create: after the ControllerRevision, before the LeaderWorkerSet", point: "after-revision", fresh: true, trigger: create},
		{name: "create: after the LeaderWorkerSet, before the Service", point: "after-lws", fresh: true, trigger: create},
		{name: "create: after the Service, before the status", point: "after-service", fresh: true, trigger: create},
		{name: "rolling update: after the new revision, before the LeaderWorkerSet moves", point: "after-revision", trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
		{name: "rolling update: after the LeaderWorkerSet moved, before the status", point: "after-lws", trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
		{name: "Recreate: after the new revision, before the old groups stop", point: "after-revision", recreate: true, trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
		{name: "Recreate: after the old groups were scaled to 0", point: "after-lws", recreate: true, trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
		{name: "canary: after the partitioned LeaderWorkerSet", point: "after-lws", trigger: startCanary, after: func(t *testing.T, ns, name string) {
			waitCanaryHeld(t, ns, name)
			update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Rollout.Partition = ptr.To[int32](0) })
		}},
		{name: "canary promote: after the LeaderWorkerSet's partition went to 0", point: "after-lws", prepare: func(t *testing.T, ns, name string) {
			startCanary(t, ns, name)
			waitCanaryHeld(t, ns, name)
		}, trigger: cli("canary", "promote")},
		{name: "canary abort: after the current revision was renumbered", point: "after-renumber", prepare: func(t *testing.T, ns, name string) {
			startCanary(t, ns, name)
			waitCanaryHeld(t, ns, name)
		}, trigger: cli("canary", "abort")},
		{name: "rollout undo: after the LeaderWorkerSet went back", point: "after-lws", prepare: func(t *testing.T, ns, name string) {
			update(t, ns, name, newImage)
			waitReady(t, ns, name, settle)
		}, trigger: cli("rollout", "undo")},
		{name: "restart: after the LeaderWorkerSet got the restart stamp", point: "after-lws", trigger: cli("restart")},
		{name: "scale to 0: after the LeaderWorkerSet went to 0, then back to 2", point: "after-lws", trigger: scaleTo(0), after: func(t *testing.T, ns, name string) {
			waitNoGroups(t, ns, name)
			scaleTo(2)(t, ns, name)
		}},
		{name: "scale from 0: after the LeaderWorkerSet went back to 2", point: "after-lws", prepare: func(t *testing.T, ns, name string) {
			scaleTo(0)(t, ns, name)
			waitNoGroups(t, ns, name)
		}, trigger: scaleTo(2)},
		{name: "delete: after the children's deletion, before the finalizer goes", point: "finalize-after-delete", trigger: del, deleted: true},
		{name: "delete: with the children gone, before the finalizer goes", point: "before-finalizer-removal", trigger: del, deleted: true},
	}
	// The servings the cases start from are made Ready ahead of their case, a few at a time (the
	// GPUs bound how many): each case deletes its namespace when done, which frees a slot.
	starts := make([]string, len(cases))
	ready := make([]chan struct{}, len(cases))
	slots := make(chan struct{}, 5)
	for i := range cases {
		ready[i] = make(chan struct{})
	}
	go func() {
		for i, c := range cases {
			slots <- struct{}{}
			ns, err := newNamespace()
			if err == nil && !c.fresh {
				ms := newServing(ns, killName(i), 2, 2, 1)
				if c.recreate {
					ms.Spec.Rollout.Strategy = v1.Recreate
				}
				err = kc.Create(context.Background(), ms)
			}
			if err != nil {
				t.Errorf("prepare case %d: %v", i, err)
			}
			starts[i] = ns
			close(ready[i])
		}
	}()
	for i, tc := range cases {
		<-ready[i]
		t.Run(tc.name, func(t *testing.T) {
			ns, name := starts[i], killName(i)
			defer func() { <-slots }()
			t.Cleanup(func() {
				_ = kc.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			})
			countCase(t)
			if !tc.fresh {
				waitReady(t, ns, name, settle)
			}
			if tc.prepare != nil {
				tc.prepare(t, ns, name)
			}
			copies := watchForCopies(t, ns, name)
			op.kill()
			if err := op.startWith([]string{failpoint.EnvVar + "=" + tc.point + "@" + ns + "/" + name}); err != nil {
				restartOperator(t)
				t.Fatal(err)
			}
			fault(t, fmt.Sprintf("the operator exits at failpoint %s (%s/%s)", tc.point, ns, name))
			tc.trigger(t, ns, name)
			code, err := op.waitExit(settle)
			if err != nil {
				op.kill()
				restartOperator(t)
				t.Fatalf("failpoint %s never reached: %v", tc.point, err)
			}
			if code != failpoint.ExitCode {
				violation(t, "the operator exited with %d, not the failpoint's %d", code, failpoint.ExitCode)
			}
			restartOperator(t)
			if tc.after != nil {
				tc.after(t, ns, name)
			}
			if tc.deleted {
				checkGone(t, ns, name)
				return
			}
			checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
		})
	}
}

func killName(i int) string { return "k" + string(rune('a'+i)) }

// checkGone checks what a deleted serving must leave: nothing. The serving is gone (its finalizer
// removed), and no LeaderWorkerSet, Service or ControllerRevision of it is left.
func checkGone(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	var failed []string
	err := func() error {
		var last error
		deadline := time.Now().Add(settle)
		for time.Now().Before(deadline) {
			last = nothingLeft(ctx, ns, name)
			if last == nil {
				recovered(t)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return last
	}()
	if err != nil {
		failed = append(failed, "children: "+err.Error())
	}
	if err := operatorHealthy(); err != nil {
		failed = append(failed, "operator healthy: "+err.Error())
	}
	if err := webhooksCallTheLiveOperator(leader()); err != nil {
		failed = append(failed, "webhooks call the live operator: "+err.Error())
	}
	suite.mu.Lock()
	suite.checkedInvariants += 3
	suite.servings++
	suite.violations += len(failed)
	suite.mu.Unlock()
	if len(failed) > 0 {
		t.Errorf("invariants violated for deleted %s/%s:\n  %v", ns, name, failed)
	}
}

func nothingLeft(ctx context.Context, ns, name string) error {
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1.ModelServing{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("the serving is still there (%v)", err)
	}
	sel := client.MatchingLabels{v1.LabelName: name}
	for _, list := range []client.ObjectList{&lwsv1.LeaderWorkerSetList{}, &corev1.ServiceList{}, &appsv1.ControllerRevisionList{}, &corev1.PodList{}} {
		if err := kc.List(ctx, list, client.InNamespace(ns), sel); err != nil {
			return err
		}
		if n := meta.LenList(list); n > 0 {
			return fmt.Errorf("%d %T left", n, list)
		}
	}
	return nil
}
