package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"syscall"
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
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
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
	// down runs once the operator has exited at the failpoint, before it is started again: checks
	// that the kill landed where the case says, and what the case records of that moment.
	down func(t *testing.T, ns, name string)
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
		// A new serving's LeaderWorkerSet comes first, then its finalizer, then its revision is
		// recorded, then the Service.
		{name: "create: after the LeaderWorkerSet and the finalizer, before its ControllerRevision and the Service", point: "after-finalizer", fresh: true, trigger: create,
			down: killedWithChildren(true, 0, false)},
		{name: "create: after the LeaderWorkerSet, before its ControllerRevision and the Service", point: "after-lws", fresh: true, trigger: create,
			down: killedWithChildren(true, 0, false)},
		{name: "create: after the LeaderWorkerSet and its ControllerRevision, before the Service", point: "after-revision", fresh: true, trigger: create,
			down: killedWithChildren(true, 1, false)},
		// The Service is made beside the pass (the serviceMaker): the pass's status may be written already.
		{name: "create: after the Service, made beside the pass", point: "after-service", fresh: true, trigger: create},
		// A rollout's LeaderWorkerSet moves first, then its new revision is recorded.
		{name: "rolling update: after the LeaderWorkerSet moved, before its new revision is recorded", point: "after-lws", trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) },
			down: killedWithChildren(true, 1, true)},
		{name: "rolling update: after the LeaderWorkerSet moved and its new revision, before the status", point: "after-revision", trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) },
			down: killedWithChildren(true, 2, true)},
		{name: "Recreate: after the old groups were told to stop and the new revision recorded", point: "after-revision", recreate: true, trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
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
		{name: "rolling update: after an old revision was pruned, before the status", point: "after-prune",
			prepare: fillHistory, trigger: func(t *testing.T, ns, name string) { update(t, ns, name, imageVersion(historyLimit)) },
			down: checkPruned},
		{name: "a group lost (its leader deleted): before the status reports it", point: "before-status", trigger: loseGroup1(false), after: checkGroupMadeAgain},
		{name: "made again after --cascade=orphan: after the LeaderWorkerSet was adopted", point: "after-adopt",
			trigger: func(t *testing.T, ns, name string) { killState.orphaned = orphanAndMakeAgain(t, ns, name) },
			down:    checkAdoptedOnlyTheLWS,
			after: func(t *testing.T, ns, name string) {
				waitReady(t, ns, name, settle)
				if now := podUIDs(t, ns, name); !sameKeys(now, killState.orphaned) {
					violation(t, "the groups were made again on adoption: %d pods before, %d after, not the same", len(killState.orphaned), len(now))
				}
			}},
		{name: "made again while the old children wait for the garbage collector: after the stale LeaderWorkerSet's deletion", point: "after-stale-delete",
			trigger: deleteUnfinalizedAndMakeAgain, down: checkStaleLWSDeleted},
		{name: "create: the embedded LWS after the leader StatefulSet, before any worker StatefulSet", point: "lws-after-create-leader-statefulset", fresh: true, trigger: create,
			down: func(t *testing.T, ns, name string) {
				leaders, workers := statefulSets(t, ns, name)
				if len(leaders) != 1 || len(workers) != 0 {
					violation(t, "killed with %d leader and %d worker StatefulSets, want 1 and 0", len(leaders), len(workers))
				}
				killState.made = leaders
			},
			after: checkStatefulSetsKept},
		{name: "create: the embedded LWS after a worker StatefulSet", point: "lws-after-create-worker-statefulset", fresh: true, trigger: create,
			down: func(t *testing.T, ns, name string) {
				_, workers := statefulSets(t, ns, name)
				if len(workers) == 0 {
					violation(t, "killed with no worker StatefulSet")
				}
				killState.made = workers
			},
			after: checkStatefulSetsKept},
		{name: "create: the embedded LWS after its ControllerRevision, before the leader StatefulSet", point: "lws-after-create-controllerrevision", fresh: true, trigger: create,
			down: func(t *testing.T, ns, name string) {
				leaders, workers := statefulSets(t, ns, name)
				revs := lwsRevisions(t, ns, name)
				if len(leaders)+len(workers) != 0 || len(revs) != 1 {
					violation(t, "killed with %d StatefulSets and %d ControllerRevisions of the LeaderWorkerSet, want 0 and 1", len(leaders)+len(workers), len(revs))
				}
				killState.made = revs
			},
			after: checkLWSRevisionKept},
		{name: "create: the embedded LWS after the group's headless Service", point: "lws-after-create-service", fresh: true, trigger: create,
			down: func(t *testing.T, ns, name string) {
				killState.made = headlessServices(t, ns, name)
				if len(killState.made) != 1 {
					violation(t, "killed with %d headless Services, want 1", len(killState.made))
				}
			},
			after: func(t *testing.T, ns, name string) {
				waitReady(t, ns, name, settle)
				if now := headlessServices(t, ns, name); !maps.Equal(now, killState.made) {
					violation(t, "the headless Service was made again: %v, at the kill %v", now, killState.made)
				}
			}},
		{name: "rolling update: the embedded LWS after it moved the leader StatefulSet", point: "lws-after-update-leader-statefulset",
			prepare: func(t *testing.T, ns, name string) {
				killState.made, _ = statefulSets(t, ns, name)
				killState.leaderRev = leaderTemplateRevision(t, ns, name)
			},
			trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) },
			down: func(t *testing.T, ns, name string) {
				if now := leaderTemplateRevision(t, ns, name); now == killState.leaderRev {
					violation(t, "killed with the leader StatefulSet's template still at revision %s", now)
				}
			},
			after: func(t *testing.T, ns, name string) {
				if err := statusCaughtUp(t, ns, name, 2, 2); err != nil {
					violation(t, "the rollout did not complete: %v", err)
				}
				if leaders, _ := statefulSets(t, ns, name); !maps.Equal(leaders, killState.made) {
					violation(t, "the leader StatefulSet was made again: %v, before %v", leaders, killState.made)
				}
			}},
		{name: "rolling update: the embedded LWS after it wrote the LeaderWorkerSet's status", point: "lws-after-update-leaderworkerset-status",
			trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) }},
		{name: "a worker's container restarted: the embedded LWS after it deleted the group's leader", point: "lws-after-delete-pod", trigger: loseGroup1(true), after: checkGroupMadeAgain},
		{name: "rolling update finished: the embedded LWS after it deleted its old ControllerRevision", point: "lws-after-delete-controllerrevision",
			trigger: func(t *testing.T, ns, name string) { update(t, ns, name, newImage) },
			down: func(t *testing.T, ns, name string) {
				killState.made = lwsRevisions(t, ns, name)
				if len(killState.made) != 1 {
					violation(t, "killed with %d ControllerRevisions of the LeaderWorkerSet, want the current one only", len(killState.made))
				}
				killState.orphaned = podUIDs(t, ns, name)
			},
			after: func(t *testing.T, ns, name string) {
				waitReady(t, ns, name, settle)
				if now := lwsRevisions(t, ns, name); !maps.Equal(now, killState.made) {
					violation(t, "the LeaderWorkerSet's ControllerRevisions are %v, at the kill %v", now, killState.made)
				}
				if now := podUIDs(t, ns, name); !sameKeys(now, killState.orphaned) {
					violation(t, "a group was made again after the rollout had finished: %d pods at the kill, %d after, not the same", len(killState.orphaned), len(now))
				}
			}},
		{name: "delete with --cascade=orphan: after the first child was released, before the finalizer goes", point: "finalize-after-release",
			prepare: func(t *testing.T, ns, name string) { killState.orphaned = podUIDs(t, ns, name) },
			trigger: orphanWithTheCollectorFrozen,
			down:    checkReleasedTheLWSOnly,
			after: func(t *testing.T, ns, name string) {
				checkOrphanedAndAdopted(t, ns, name, killState.orphaned)
			}},
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
		// The namespace goes and the slot is freed after the case, and also for a case -run
		// leaves out (its function never runs).
		done := func() {
			_ = kc.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: starts[i]}})
			<-slots
		}
		t.Run(tc.name, func(t *testing.T) {
			ns, name := starts[i], killName(i)
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
			if tc.down != nil {
				tc.down(t, ns, name)
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
		done()
	}
}

// killState is what a kill-point case records in one step for a later one (the cases run one at a
// time).
var killState struct {
	orphaned map[types.UID]bool   // the pods' UIDs before an orphan deletion
	made     map[string]types.UID // StatefulSets that existed at the kill
	lost     lostGroup
	oldUID   types.UID // the deleted serving's
	frozen   int       // the pid of the frozen kube-controller-manager
	// leaderRev is the LWS template revision of the leader StatefulSet before a rolling update.
	leaderRev string
	// spec is the serving's spec at the kill, for one made again after it is deleted.
	spec v1.ModelServingSpec
}

// lostGroup: the pods' UIDs of the group that keeps running (0) and of the one that is lost (1).
type lostGroup struct{ kept, gone map[string]types.UID }

func imageVersion(i int) func(*v1.ModelServing) {
	return func(ms *v1.ModelServing) { ms.Spec.Engine.Image = fmt.Sprintf("vllm/vllm-openai:v0.12.%d", i) }
}

// fillHistory records historyLimit-1 more revisions (new images, each recorded before the next):
// the history is full, and the next one prunes the oldest.
func fillHistory(t *testing.T, ns, name string) {
	for i := 1; i < historyLimit; i++ {
		update(t, ns, name, imageVersion(i))
		updateRevision(t, ns, name, getServing(t, ns, name).Generation)
	}
	waitReady(t, ns, name, settle)
	if n := len(revisionNumbers(t, ns, name)); n != historyLimit {
		t.Fatalf("%d ControllerRevisions after filling the history, want %d", n, historyLimit)
	}
}

// revisionNumbers are the numbers of the serving's ControllerRevisions, lowest first.
func revisionNumbers(t *testing.T, ns, name string) []int64 {
	t.Helper()
	var revs appsv1.ControllerRevisionList
	// The serving's own (LWS keeps ControllerRevisions with our labels too, without the hash).
	if err := kc.List(context.Background(), &revs, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}, client.HasLabels{revision.LabelHash}); err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, r := range revs.Items {
		out = append(out, r.Revision)
	}
	slices.Sort(out)
	return out
}

// checkPruned: killed after the prune, the oldest revision (1) is gone and the new one (11) kept.
func checkPruned(t *testing.T, ns, name string) {
	got := revisionNumbers(t, ns, name)
	if len(got) != historyLimit || got[0] != 2 || got[len(got)-1] != historyLimit+1 {
		violation(t, "revisions %v at the kill, want 2 to %d", got, historyLimit+1)
	}
}

// loseGroup1 records the groups' pods and loses group 1's leader (deleted by hand) or, with
// restarted, has a container of its worker restart (its status says so, as the kubelet's would),
// which makes LWS recreate the group.
func loseGroup1(restarted bool) func(t *testing.T, ns, name string) {
	return func(t *testing.T, ns, name string) {
		ctx := context.Background()
		ps := live(pods(t, ns, name))
		killState.lost = lostGroup{kept: uids(ps, 0), gone: uids(ps, 1)}
		pod := name + "-1"
		if restarted {
			pod = name + "-1-1"
		}
		if _, ok := killState.lost.gone[pod]; !ok {
			t.Fatalf("no pod %s in group 1: %v", pod, killState.lost.gone)
		}
		if !restarted {
			if err := kc.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}); err != nil {
				t.Fatal(err)
			}
			return
		}
		p := &corev1.Pod{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod}, p); err != nil {
			t.Fatal(err)
		}
		if len(p.Status.ContainerStatuses) == 0 {
			t.Fatalf("pod %s has no container status", pod)
		}
		p.Status.ContainerStatuses[0].RestartCount++
		if err := kc.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// checkGroupMadeAgain: group 1 is made again whole (none of its pods kept) and Ready, and group 0
// is left alone (the same pods). The status alone does not say so: killed before it reported
// the loss, the serving still says Ready.
func checkGroupMadeAgain(t *testing.T, ns, name string) {
	testenv.Eventually(t, settle, "group 1 made again and Ready", func() (bool, error) {
		now := live(pods(t, ns, name))
		made := 0
		for _, p := range now {
			if p.Group == 1 && p.Ready && killState.lost.gone[p.Name] != p.UID {
				made++
			}
		}
		return made == 2, fmt.Errorf("pods %v", now)
	})
	if now := uids(live(pods(t, ns, name)), 0); !maps.Equal(now, killState.lost.kept) {
		violation(t, "group 0 was touched: pods %v, before %v", now, killState.lost.kept)
	}
}

// checkAdoptedOnlyTheLWS: killed right after the adoption of the LeaderWorkerSet, the Service is
// still without a controller.
func checkAdoptedOnlyTheLWS(t *testing.T, ns, name string) {
	ctx := context.Background()
	ms := getServing(t, ns, name)
	lws := &lwsv1.LeaderWorkerSet{}
	svc := &corev1.Service{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, svc); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(lws); ref == nil || ref.UID != ms.UID {
		violation(t, "killed after the adoption, the LeaderWorkerSet's controller is %+v, not the new serving %s", ref, ms.UID)
	}
	if ref := metav1.GetControllerOf(svc); ref != nil {
		violation(t, "killed after the LeaderWorkerSet's adoption, the Service is controlled already (%+v)", ref)
	}
}

// killedWithChildren checks what a new serving had at the kill: its LeaderWorkerSet or not, how many
// ControllerRevisions of its own, its Service or not.
func killedWithChildren(lws bool, revisions int, service bool) func(t *testing.T, ns, name string) {
	return func(t *testing.T, ns, name string) {
		ctx := context.Background()
		hasLWS := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &lwsv1.LeaderWorkerSet{}) == nil
		hasService := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, &corev1.Service{}) == nil
		revs := len(revisionNumbers(t, ns, name))
		if hasLWS != lws || revs != revisions || hasService != service {
			violation(t, "killed with LeaderWorkerSet %t, %d ControllerRevisions, Service %t; want %t, %d, %t",
				hasLWS, revs, hasService, lws, revisions, service)
		}
	}
}

// freezeControllerManager stops kube-controller-manager (SIGSTOP) and returns its pid; it is
// resumed when the case ends, if not before.
func freezeControllerManager(t *testing.T) int {
	pids, err := cluster.ComponentPids()
	if err != nil {
		t.Fatal(err)
	}
	kcm := pids["kube-controller-manager"]
	if kcm == 0 {
		t.Fatalf("no kube-controller-manager among %v", pids)
	}
	if err := syscall.Kill(kcm, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(kcm, syscall.SIGCONT) })
	return kcm
}

// orphanWithTheCollectorFrozen deletes the serving with --cascade=orphan while the garbage
// collector (kube-controller-manager) is frozen: the collector orphans the children too, and
// when it comes first the operator finds nothing of its own to release (the failpoint would
// never be reached). It resumes once the operator has exited at the failpoint.
func orphanWithTheCollectorFrozen(t *testing.T, ns, name string) {
	fault(t, "freeze kube-controller-manager (SIGSTOP); kubectl delete --cascade=orphan")
	killState.frozen = freezeControllerManager(t)
	if out, err := kubectlCmd("delete", "modelserving", name, "-n", ns, "--cascade=orphan", "--wait=false"); err != nil {
		t.Fatalf("kubectl delete --cascade=orphan: %v\n%s", err, out)
	}
}

// checkReleasedTheLWSOnly: killed in the finalizer's release of a serving deleted with
// --cascade=orphan, after its first child (the LeaderWorkerSet): the serving is still there,
// Terminating, and its LeaderWorkerSet has no controller. The collector resumes.
func checkReleasedTheLWSOnly(t *testing.T, ns, name string) {
	ctx := context.Background()
	defer func() {
		if killState.frozen > 0 { // never 0: that would signal our own process group
			_ = syscall.Kill(killState.frozen, syscall.SIGCONT)
		}
	}()
	ms := getServing(t, ns, name)
	killState.spec = *ms.Spec.DeepCopy()
	if ms.DeletionTimestamp.IsZero() {
		violation(t, "killed in the release, the serving is not being deleted")
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(lws); ref != nil {
		violation(t, "killed after the LeaderWorkerSet's release, it is still controlled by %+v", ref)
	}
}

// checkOrphanedAndAdopted: the serving deleted with --cascade=orphan goes, its children stay
// without a controller and its groups keep running (the same pods); made again with the same
// spec (as it was at the kill), it adopts them, still the same pods.
func checkOrphanedAndAdopted(t *testing.T, ns, name string, pods map[types.UID]bool) {
	ctx := context.Background()
	testenv.Eventually(t, settle, "the serving deleted with --cascade=orphan to go", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1.ModelServing{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	kept := []client.Object{&lwsv1.LeaderWorkerSet{}, &corev1.Service{}}
	for i, key := range []string{name, name + "-api"} {
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: key}, kept[i]); err != nil {
			violation(t, "%T %s is gone after --cascade=orphan: %v", kept[i], key, err)
			continue
		}
		if ref := metav1.GetControllerOf(kept[i]); ref != nil {
			violation(t, "%T %s is still controlled after --cascade=orphan: %+v", kept[i], key, ref)
		}
	}
	makeAgainAfterOrphan(t, ns, name, killState.spec, pods)
	waitReady(t, ns, name, settle)
	if now := podUIDs(t, ns, name); !sameKeys(now, pods) {
		violation(t, "the groups were made again on adoption: %d pods before, %d after, not the same", len(pods), len(now))
	}
}

// deleteUnfinalizedAndMakeAgain: with the garbage collector (kube-controller-manager) and the
// operator frozen, the serving is deleted and its finalizer removed by hand (as a user does with
// a serving stuck Terminating), then made again with the same name. The operator, resumed, finds
// children controlled by the earlier serving's UID, which the collector has not deleted.
func deleteUnfinalizedAndMakeAgain(t *testing.T, ns, name string) {
	ctx := context.Background()
	fault(t, "freeze kube-controller-manager and the operator (SIGSTOP); delete the serving and remove its finalizer by hand; make it again; resume the operator")
	kcm := freezeControllerManager(t)
	op.signal(t, syscall.SIGSTOP)
	old := getServing(t, ns, name)
	killState.oldUID = old.UID
	if err := kc.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := kc.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the serving gone", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	if err := kc.Create(ctx, newServing(ns, name, 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	op.signal(t, syscall.SIGCONT)
	killState.frozen = kcm // the garbage collector resumes once the operator has exited, or the case ends
}

// checkStaleLWSDeleted: killed right after the stale LeaderWorkerSet's deletion, the Service is
// still the earlier serving's (the collector is frozen); then the collector resumes.
func checkStaleLWSDeleted(t *testing.T, ns, name string) {
	ctx := context.Background()
	defer func() {
		if killState.frozen > 0 { // never 0: that would signal our own process group
			_ = syscall.Kill(killState.frozen, syscall.SIGCONT)
		}
	}()
	lws := &lwsv1.LeaderWorkerSet{}
	err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws)
	if err == nil && lws.DeletionTimestamp.IsZero() {
		violation(t, "killed after the stale delete, the LeaderWorkerSet is there and not being deleted (controller %+v)", metav1.GetControllerOf(lws))
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, svc); err != nil {
		violation(t, "the earlier serving's Service: %v", err)
	} else if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != killState.oldUID {
		violation(t, "the Service's controller is %+v, not the earlier serving %s", ref, killState.oldUID)
	}
}

// statefulSets are the serving's leader StatefulSet (named after its LeaderWorkerSet) and its
// groups' worker StatefulSets, by name.
func statefulSets(t *testing.T, ns, name string) (leaders, workers map[string]types.UID) {
	t.Helper()
	var list appsv1.StatefulSetList
	if err := kc.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	leaders, workers = map[string]types.UID{}, map[string]types.UID{}
	for _, s := range list.Items {
		if s.DeletionTimestamp != nil {
			continue
		}
		if s.Name == name {
			leaders[s.Name] = s.UID
		} else {
			workers[s.Name] = s.UID
		}
	}
	return leaders, workers
}

// checkStatefulSetsKept: the StatefulSets that existed at the kill are the ones the groups run
// on (none made twice), and the serving has its one leader and two worker StatefulSets.
func checkStatefulSetsKept(t *testing.T, ns, name string) {
	waitReady(t, ns, name, settle)
	leaders, workers := statefulSets(t, ns, name)
	for sts, uid := range killState.made {
		if leaders[sts] != uid && workers[sts] != uid {
			violation(t, "StatefulSet %s was made again (UID %s at the kill)", sts, uid)
		}
	}
	if len(leaders) != 1 || len(workers) != 2 {
		violation(t, "%d leader and %d worker StatefulSets, want 1 and 2", len(leaders), len(workers))
	}
}

// leaderTemplateRevision is the LWS template revision the leader StatefulSet's pod template carries.
func leaderTemplateRevision(t *testing.T, ns, name string) string {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	return sts.Spec.Template.Labels[lwsv1.RevisionKey]
}

// lwsRevisions are the embedded LWS's ControllerRevisions of the serving's LeaderWorkerSet (not
// the serving's own, nor its StatefulSets'), by name.
func lwsRevisions(t *testing.T, ns, name string) map[string]types.UID {
	t.Helper()
	var revs appsv1.ControllerRevisionList
	if err := kc.List(context.Background(), &revs, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, r := range revs.Items {
		// The StatefulSets' own revisions carry the label too (the pods' labels).
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.Kind == "LeaderWorkerSet" {
			out[r.Name] = r.UID
		}
	}
	return out
}

// checkLWSRevisionKept: the LeaderWorkerSet's ControllerRevision made before the kill is the one
// its groups run with, none made twice for the same template.
func checkLWSRevisionKept(t *testing.T, ns, name string) {
	waitReady(t, ns, name, settle)
	if now := lwsRevisions(t, ns, name); !maps.Equal(now, killState.made) {
		violation(t, "the LeaderWorkerSet's ControllerRevisions are %v, at the kill %v", now, killState.made)
	}
}

// headlessServices are the Services the embedded LWS makes for the serving's groups, by name.
func headlessServices(t *testing.T, ns, name string) map[string]types.UID {
	t.Helper()
	var list corev1.ServiceList
	if err := kc.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, s := range list.Items {
		if s.DeletionTimestamp == nil {
			out[s.Name] = s.UID
		}
	}
	return out
}

// killName names case i's serving: ka…kz, then kaa… (a DNS-1035 label either way).
func killName(i int) string {
	if i < 26 {
		return "k" + string(rune('a'+i))
	}
	return fmt.Sprintf("k%c%c", rune('a'+i/26-1), rune('a'+i%26))
}

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
