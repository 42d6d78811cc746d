package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// childCase is a fault case that does not touch the operator process or the API server: it runs
// beside the others, in its own namespace, against the shared operator.
type childCase struct {
	name string
	// replicas is the serving's group count once recovered (2 when 0).
	replicas int
	// before, when set, runs in the namespace before the serving is made; the serving is then not
	// waited for (the case decides what it should show first).
	before func(t *testing.T, ns, name string)
	inject func(t *testing.T, ns, name string)
}

// gpuPool bounds how many GPUs the concurrent cases ask for at once (the simulated cluster has
// 4 nodes × 8; a Ready serving of the suite takes 4, a scale-up 8).
type gpuPool struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func newGPUPool(n int) *gpuPool {
	p := &gpuPool{free: n}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *gpuPool) take(n int) {
	p.mu.Lock()
	for p.free < n {
		p.cond.Wait()
	}
	p.free -= n
	p.mu.Unlock()
}

func (p *gpuPool) give(n int) {
	p.mu.Lock()
	p.free += n
	p.mu.Unlock()
	p.cond.Broadcast()
}

// runConcurrently runs the cases as subtests at the same time, as many as the GPUs allow.
func runConcurrently(t *testing.T, prefix string, cases []childCase) {
	pool := newGPUPool(28) // leave a group's worth for what the cluster runs besides
	var wg sync.WaitGroup
	for i, tc := range cases {
		replicas := tc.replicas
		if replicas == 0 {
			replicas = 2
		}
		gpus := 2 * max(replicas, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool.take(gpus)
			defer pool.give(gpus)
			t.Run(tc.name, func(t *testing.T) {
				ns := namespace(t)
				name := prefix + string(rune('a'+i))
				ms := newServing(ns, name, 2, 2, 1)
				var copies *copyWatch
				if tc.before != nil {
					copies = watchForCopies(t, ns, name)
					countCase(t)
					tc.before(t, ns, name)
					if err := kc.Create(context.Background(), ms); err != nil {
						t.Fatal(err)
					}
				} else {
					faultCase(t, ns, ms)
					copies = watchForCopies(t, ns, name)
				}
				tc.inject(t, ns, name)
				checkInvariants(t, ns, name, replicas, 2, copies, faultQuiet)
			})
		}()
	}
	wg.Wait()
}

// editLWS changes the serving's LeaderWorkerSet by hand (an Update, as kubectl edit sends).
func editLWS(t *testing.T, ns, name string, change func(*lwsv1.LeaderWorkerSet)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "hand edit of the LeaderWorkerSet", func() (bool, error) {
		lws := &lwsv1.LeaderWorkerSet{}
		if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
			return false, err
		}
		change(lws)
		err := kc.Update(context.Background(), lws)
		return err == nil, err
	})
}

// lwsImages are the images of the LWS's leader and worker templates.
func lwsImages(t *testing.T, ns, name string) []string {
	t.Helper()
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		t.Fatal(err)
	}
	var out []string
	tmpl := lws.Spec.LeaderWorkerTemplate
	if tmpl.LeaderTemplate != nil {
		for _, c := range tmpl.LeaderTemplate.Spec.Containers {
			out = append(out, c.Image)
		}
	}
	for _, c := range tmpl.WorkerTemplate.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

// podUIDs are the UIDs of the serving's live pods, to tell a group that kept running from one
// made again.
func podUIDs(t *testing.T, ns, name string) map[types.UID]bool {
	t.Helper()
	out := map[types.UID]bool{}
	for _, p := range live(pods(t, ns, name)) {
		out[p.UID] = true
	}
	return out
}

// foreignLWS is a LeaderWorkerSet someone made by hand: no owner, none of our labels.
func foreignLWS(ns, name string) *lwsv1.LeaderWorkerSet {
	return &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "someone-else"}},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:        ptr.To[int32](1),
			StartupPolicy:   lwsv1.LeaderCreatedStartupPolicy,
			RolloutStrategy: lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType},
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](1), WorkerTemplate: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "someone-else"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "theirs", Image: "someone/else:1"}}},
			}},
		},
	}
}

// waitNameConflict waits until the serving reports the conflict, naming the object, and the user
// sees it in kubectl llm describe.
func waitNameConflict(t *testing.T, ns, name, object string) {
	t.Helper()
	testenv.Eventually(t, settle, "Degraded NameConflict naming "+object, func() (bool, error) {
		for _, c := range getServing(t, ns, name).Status.Conditions {
			if c.Type == v1.ConditionDegraded && c.Reason == v1.ReasonNameConflict && strings.Contains(c.Message, object) {
				return true, nil
			}
		}
		return false, nil
	})
	out, _ := kubectlLLM("describe", name, "-n", ns)
	if !strings.Contains(out, "NameConflict") || !strings.Contains(out, object) {
		violation(t, "kubectl llm describe does not show the NameConflict on %s:\n%s", object, out)
	}
}

// unchangedFor checks that obj (re-read every 200 ms for d) keeps its UID, generation and owners.
func unchangedFor(t *testing.T, d time.Duration, obj client.Object) {
	t.Helper()
	before := obj.DeepCopyObject().(client.Object)
	testenv.Consistently(t, d, obj.GetName()+" left alone", func() error {
		now := obj.DeepCopyObject().(client.Object)
		if err := kc.Get(context.Background(), client.ObjectKeyFromObject(obj), now); err != nil {
			return err
		}
		if now.GetUID() != before.GetUID() || now.GetGeneration() != before.GetGeneration() || len(now.GetOwnerReferences()) != len(before.GetOwnerReferences()) || !now.GetDeletionTimestamp().IsZero() {
			return errorf("%s was touched: generation %d -> %d, owners %v -> %v", obj.GetName(), before.GetGeneration(), now.GetGeneration(), before.GetOwnerReferences(), now.GetOwnerReferences())
		}
		return nil
	})
}

func TestFaultsChildren(t *testing.T) {
	ctx := context.Background()
	runConcurrently(t, "c", []childCase{
		{name: "LeaderWorkerSet image edited by hand", inject: func(t *testing.T, ns, name string) {
			want := lwsImages(t, ns, name)
			fault(t, "set the LeaderWorkerSet's container images to someone/else:1 by hand")
			editLWS(t, ns, name, func(lws *lwsv1.LeaderWorkerSet) {
				tmpl := &lws.Spec.LeaderWorkerTemplate
				if tmpl.LeaderTemplate != nil {
					for i := range tmpl.LeaderTemplate.Spec.Containers {
						tmpl.LeaderTemplate.Spec.Containers[i].Image = "someone/else:1"
					}
				}
				for i := range tmpl.WorkerTemplate.Spec.Containers {
					tmpl.WorkerTemplate.Spec.Containers[i].Image = "someone/else:1"
				}
			})
			testenv.Eventually(t, settle, "the images restored", func() (bool, error) {
				got := lwsImages(t, ns, name)
				return strings.Join(got, ",") == strings.Join(want, ","), errorf("images %v, want %v", got, want)
			})
		}},
		{name: "LeaderWorkerSet group size and rollout edited by hand", inject: func(t *testing.T, ns, name string) {
			fault(t, "set the LeaderWorkerSet's group size to 3 and maxSurge to 2 by hand")
			editLWS(t, ns, name, func(lws *lwsv1.LeaderWorkerSet) {
				lws.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](3)
				lws.Spec.RolloutStrategy.RollingUpdateConfiguration = nil
			})
			testenv.Eventually(t, settle, "the group size restored", func() (bool, error) {
				lws := &lwsv1.LeaderWorkerSet{}
				err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws)
				return err == nil && ptr.Deref(lws.Spec.LeaderWorkerTemplate.Size, 0) == 2, err
			})
		}},
		{name: "LeaderWorkerSet owner reference removed by hand", inject: func(t *testing.T, ns, name string) {
			uids := podUIDs(t, ns, name)
			fault(t, "remove the LeaderWorkerSet's owner reference by hand")
			editLWS(t, ns, name, func(lws *lwsv1.LeaderWorkerSet) { lws.OwnerReferences = nil })
			waitReady(t, ns, name, settle)
			if err := childrenOwnedByTheLiveServing(ns, name); err == nil {
				if now := podUIDs(t, ns, name); len(now) != len(uids) || !sameKeys(now, uids) {
					violation(t, "the groups were made again after the adoption: %d pods before, %d after, not the same", len(uids), len(now))
				}
			}
		}},
		{name: "every ControllerRevision deleted by hand", inject: func(t *testing.T, ns, name string) {
			fault(t, "delete the serving's ControllerRevisions")
			if err := kc.DeleteAllOf(ctx, &appsv1.ControllerRevision{}, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the leader pod of a group deleted by hand", inject: func(t *testing.T, ns, name string) {
			var leader string
			for _, p := range live(pods(t, ns, name)) {
				if p.Group == 1 && p.Worker == 0 {
					leader = p.Name
				}
			}
			fault(t, "delete group 1's leader pod "+leader)
			if err := kc.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leader}}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the serving's status wiped by hand", inject: func(t *testing.T, ns, name string) {
			fault(t, "replace the serving's status with an empty one")
			testenv.Eventually(t, 10*time.Second, "the status wiped", func() (bool, error) {
				ms := getServing(t, ns, name)
				ms.Status = v1.ModelServingStatus{}
				err := kc.Status().Update(ctx, ms)
				return err == nil, err
			})
		}},
		{name: "the serving's finalizer removed by hand", inject: func(t *testing.T, ns, name string) {
			fault(t, "remove the serving's finalizer")
			update(t, ns, name, func(ms *v1.ModelServing) { ms.Finalizers = nil })
			testenv.Eventually(t, settle, "the finalizer back", func() (bool, error) {
				for _, f := range getServing(t, ns, name).Finalizers {
					if f == v1.FinalizerChildren {
						return true, nil
					}
				}
				return false, nil
			})
		}},
		{name: "a LeaderWorkerSet of someone else's holds the serving's name", before: func(t *testing.T, ns, name string) {
			theirs := foreignLWS(ns, name)
			fault(t, "a LeaderWorkerSet "+name+" made by hand before the serving")
			if err := kc.Create(ctx, theirs); err != nil {
				t.Fatal(err)
			}
		}, inject: func(t *testing.T, ns, name string) {
			waitNameConflict(t, ns, name, "LeaderWorkerSet "+name)
			theirs := &lwsv1.LeaderWorkerSet{}
			if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, theirs); err != nil {
				t.Fatal(err)
			}
			unchangedFor(t, 3*time.Second, theirs)
			if imgs := lwsImages(t, ns, name); len(imgs) != 1 || imgs[0] != "someone/else:1" {
				violation(t, "their LeaderWorkerSet was changed: images %v", imgs)
			}
			// The owner deletes theirs: the serving takes the name.
			if err := kc.Delete(ctx, theirs); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a Service of someone else's holds <name>-api", before: func(t *testing.T, ns, name string) {
			theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name + "-api", Namespace: ns},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Port: 80}}}}
			fault(t, "a Service "+name+"-api made by hand before the serving")
			if err := kc.Create(ctx, theirs); err != nil {
				t.Fatal(err)
			}
		}, inject: func(t *testing.T, ns, name string) {
			waitNameConflict(t, ns, name, "Service "+name+"-api")
			// The groups still come up: only the Service is someone else's.
			testenv.Eventually(t, settle, "the groups Ready despite the conflict", func() (bool, error) {
				return readyGroups(live(pods(t, ns, name)), 2) == 2, nil
			})
			theirs := &corev1.Service{}
			if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, theirs); err != nil {
				t.Fatal(err)
			}
			unchangedFor(t, 3*time.Second, theirs)
			if theirs.Spec.Selector["app"] != "mine" {
				violation(t, "their Service was changed: selector %v", theirs.Spec.Selector)
			}
			if err := kc.Delete(ctx, theirs); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "serving deleted and made again with the same name mid rolling update", inject: func(t *testing.T, ns, name string) {
			update(t, ns, name, newImage)
			underWay(t, ns, name, getServing(t, ns, name).Generation)
			old := getServing(t, ns, name)
			fault(t, "delete the serving mid rollout and create it again, same name, as soon as the name is free")
			if err := kc.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, settle, "the old serving gone", func() (bool, error) {
				err := kc.Get(ctx, client.ObjectKeyFromObject(old), &v1.ModelServing{})
				return apierrors.IsNotFound(err), err
			})
			again := newServing(ns, name, 2, 2, 1)
			newImage(again)
			if err := kc.Create(ctx, again); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "serving deleted with --cascade=orphan, then made again", inject: func(t *testing.T, ns, name string) {
			fault(t, "kubectl delete --cascade=orphan the serving, then create it again with the same spec")
			uids := orphanAndMakeAgain(t, ns, name)
			// The decision: the new serving adopts them, and no group is made again.
			waitReady(t, ns, name, settle)
			if err := childrenOwnedByTheLiveServing(ns, name); err == nil {
				if now := podUIDs(t, ns, name); !sameKeys(now, uids) {
					violation(t, "the groups were made again on adoption: %d pods before, %d after, not the same", len(uids), len(now))
				}
			}
		}},
	})
}

// orphanAndMakeAgain deletes the serving with kubectl delete --cascade=orphan, checks that its
// children and groups stay, and makes it again with the same spec. It returns the pods' UIDs from
// before.
func orphanAndMakeAgain(t *testing.T, ns, name string) map[types.UID]bool {
	t.Helper()
	ctx := context.Background()
	uids := podUIDs(t, ns, name)
	old := getServing(t, ns, name)
	// What the serving and its LeaderWorkerSet went through, told when the children were lost.
	servingSeen := watchMeta(t, &v1.ModelServingList{}, ns, name)
	lwsSeen := watchMeta(t, &lwsv1.LeaderWorkerSetList{}, ns, name)
	if out, err := kubectlCmd("delete", "modelserving", name, "-n", ns, "--cascade=orphan", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("kubectl delete --cascade=orphan: %v\n%s", err, out)
	}
	// What the user asked for: the groups keep running, the children stay.
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
		violation(t, "the LeaderWorkerSet is gone after --cascade=orphan: %v\nthe serving's versions:\n%s\nthe LeaderWorkerSet's versions:\n%s",
			err, servingSeen.told(), lwsSeen.told())
	}
	testenv.Eventually(t, 30*time.Second, "the garbage collector to orphan the children", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lws)
		return err == nil && metav1.GetControllerOf(lws) == nil, err
	})
	makeAgainAfterOrphan(t, ns, name, old.Spec, uids)
	return uids
}

// makeAgainAfterOrphan checks that the groups kept running through a deletion with
// --cascade=orphan (the same pods), then makes the serving again with the same spec.
func makeAgainAfterOrphan(t *testing.T, ns, name string, spec v1.ModelServingSpec, pods map[types.UID]bool) {
	t.Helper()
	if now := podUIDs(t, ns, name); !sameKeys(now, pods) {
		violation(t, "pods changed after --cascade=orphan: %d before, %d after, not the same", len(pods), len(now))
	}
	again := newServing(ns, name, 2, 2, 1)
	again.Spec = *spec.DeepCopy()
	if err := kc.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
}

// metaWatch records, from a watch of one object, each event with what of its metadata decides
// its deletion: finalizers, owners (by UID), deletion, and who wrote it.
type metaWatch struct {
	mu   sync.Mutex
	seen []string
}

func watchMeta(t *testing.T, list client.ObjectList, ns, name string) *metaWatch {
	t.Helper()
	m := &metaWatch{}
	watchObject(t, list, ns, name, func(typ watch.EventType, o client.Object) {
		m.mu.Lock()
		m.seen = append(m.seen, fmt.Sprintf("%s %s", typ, metaLine(o, time.Now())))
		m.mu.Unlock()
	})
	return m
}

// metaLine is one version of an object's metadata, as metaWatch tells it.
func metaLine(o client.Object, at time.Time) string {
	var owners, managers []string
	for _, ref := range o.GetOwnerReferences() {
		owners = append(owners, fmt.Sprintf("%s/%s", ref.Kind, ref.UID))
	}
	for _, f := range o.GetManagedFields() {
		managers = append(managers, fmt.Sprintf("%s:%s@%s", f.Manager, f.Operation, f.Time.Format("15:04:05")))
	}
	deleted := "-"
	if ts := o.GetDeletionTimestamp(); ts != nil {
		deleted = ts.Format("15:04:05")
	}
	return fmt.Sprintf("at %s uid %s rv %s deleted %s finalizers %v owners %v managers %v",
		at.Format("15:04:05.000"), o.GetUID(), o.GetResourceVersion(), deleted, o.GetFinalizers(), owners, managers)
}

func (m *metaWatch) told() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.seen, "\n")
}

func sameKeys(a, b map[types.UID]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// kubectlCmd runs the control plane's kubectl against the simulated cluster as its admin.
func kubectlCmd(args ...string) (string, error) {
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
