package operator_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// countApplies counts the server-side applies of StatefulSets a client sends.
type countApplies struct {
	rt   http.RoundTripper
	sent *atomic.Int32
}

func (c countApplies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/statefulsets/") &&
		strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
		c.sent.Add(1)
	}
	return c.rt.RoundTrip(req)
}

// leaderStatefulSet is a leader StatefulSet as the LWS controller applies it: unstructured, with
// its partition.
func leaderStatefulSet(ns string, partition int64) *unstructured.Unstructured {
	labels := map[string]any{"leaderworkerset.sigs.k8s.io/name": "qwen"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"namespace": ns, "name": "qwen", "labels": labels},
		"spec": map[string]any{
			"replicas":    int64(2),
			"serviceName": "qwen",
			"selector":    map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "engine", "image": "vllm:1"}}},
			},
			"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": partition}},
		},
	}}
	return u
}

// The embedded LWS applies its leader StatefulSet in every pass; an apply that would change
// nothing is not sent. It is sent again once anything an apply sets has moved: the spec (by
// another field manager), a label, the object itself (deleted and made again), or what is applied.
// A change of the StatefulSet's status alone sends nothing.
func TestTheEmbeddedLWSSendsNoApplyThatWouldChangeNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t)
	var sent atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countApplies{rt: rt, sent: &sent} })
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cache.New(env.Config, cache.Options{Scheme: testenv.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	applies := operator.NewUnchangedApplies(c, ca)
	inf, err := ca.GetInformer(ctx, &appsv1.StatefulSet{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(applies.ForgetDeleted()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	key := types.NamespacedName{Namespace: ns, Name: "qwen"}
	skipped0 := applies.Skipped()

	apply := func(partition int64) *unstructured.Unstructured {
		t.Helper()
		u := leaderStatefulSet(ns, partition)
		//nolint:staticcheck // as LWS applies (client.Apply through Patch)
		if err := applies.Patch(ctx, u, client.Apply, client.FieldOwner("lws"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		return u
	}
	expectSent := func(want int32, what string) {
		t.Helper()
		if got := sent.Load(); got != want {
			t.Fatalf("%s: %d applies sent, want %d", what, got, want)
		}
	}
	// cached waits until the cache holds the StatefulSet as the API server has it now.
	cached := func(what string) *appsv1.StatefulSet {
		t.Helper()
		live := &appsv1.StatefulSet{}
		if err := env.Client.Get(ctx, key, live); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, "the cache to see "+what, func() (bool, error) {
			got := &appsv1.StatefulSet{}
			if err := ca.Get(ctx, key, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return got.ResourceVersion == live.ResourceVersion, nil
		})
		return live
	}

	first := apply(0)
	expectSent(1, "the first apply")
	live := cached("the first apply")

	// The same apply again: not sent; the caller gets the StatefulSet as it is.
	again := apply(0)
	expectSent(1, "the same apply again")
	if again.GetUID() != live.UID || again.GetGeneration() != live.Generation || again.GetName() != "qwen" {
		t.Errorf("a skipped apply returned %s %s generation %d, want the StatefulSet %s generation %d",
			again.GetName(), again.GetUID(), again.GetGeneration(), live.UID, live.Generation)
	}
	if first.GetUID() != live.UID {
		t.Errorf("the sent apply returned UID %s, want %s", first.GetUID(), live.UID)
	}

	// The StatefulSet controller's status write: nothing an apply sets moved.
	live.Status.Replicas, live.Status.ReadyReplicas, live.Status.ObservedGeneration = 2, 1, live.Generation
	if err := env.Client.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	cached("the status write")
	apply(0)
	expectSent(1, "the same apply after a status write")

	// Another field manager scales the StatefulSet: the apply is sent and takes the spec back.
	if err := env.Client.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)), client.FieldOwner("kubectl-scale")); err != nil {
		t.Fatal(err)
	}
	cached("the scale")
	apply(0)
	expectSent(2, "the same apply after another manager's change of the spec")
	if got := cached("the apply after the scale"); got.Spec.Replicas == nil || *got.Spec.Replicas != 2 {
		t.Errorf("replicas %v after the apply, want 2", got.Spec.Replicas)
	}

	// A label the apply sets, changed by someone else: sent again.
	if err := env.Client.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"leaderworkerset.sigs.k8s.io/name":"other"}}}`)), client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	cached("the label's change")
	apply(0)
	expectSent(3, "the same apply after its label was changed")
	if got := cached("the apply after the label's change"); got.Labels["leaderworkerset.sigs.k8s.io/name"] != "qwen" {
		t.Errorf("label %q after the apply, want qwen", got.Labels["leaderworkerset.sigs.k8s.io/name"])
	}
	apply(0)
	expectSent(3, "the same apply once more")

	if got := applies.Skipped() - skipped0; got != 3 {
		t.Errorf("%s counted %v applies not sent, want 3", operator.SkippedAppliesMetric, got)
	}

	// Another apply (a rollout's next partition): sent.
	apply(1)
	expectSent(4, "an apply of another partition")
	cached("the partition's apply")

	// The StatefulSet deleted: what was sent for it is forgotten; one made again under the same
	// name (another UID) gets the apply, even one the same as the last sent for the name before.
	if err := env.Client.Delete(ctx, live); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the deleted StatefulSet forgotten", func() (bool, error) {
		return !applies.Remembers(key), nil
	})
	apply(1)
	expectSent(5, "the apply that makes the StatefulSet again")
	remade := cached("the StatefulSet made again")
	if remade.UID == live.UID {
		t.Fatal("the StatefulSet was not made again")
	}
	// Made again by someone else between two passes, under the name of one this process applied
	// (here what was sent is not forgotten: a process whose informer missed the deletion): another
	// object, another UID, so the apply is sent.
	unforgetting := operator.NewUnchangedApplies(c, ca)
	if err := unforgetting.Patch(ctx, leaderStatefulSet(ns, 1), client.Apply, client.FieldOwner("lws"), client.ForceOwnership); err != nil { //nolint:staticcheck // as LWS applies
		t.Fatal(err)
	}
	expectSent(6, "the first apply of a second client")
	if err := env.Client.Delete(ctx, remade); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the StatefulSet gone", func() (bool, error) {
		err := env.Client.Get(ctx, key, &appsv1.StatefulSet{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	other := leaderStatefulSet(ns, 1)
	other.SetManagedFields(nil)
	if err := env.Client.Create(ctx, other, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	if got := cached("the StatefulSet made by someone else"); got.Generation != remade.Generation {
		t.Fatalf("generation %d, want %d as before (only the UID tells them apart)", got.Generation, remade.Generation)
	}
	if err := unforgetting.Patch(ctx, leaderStatefulSet(ns, 1), client.Apply, client.FieldOwner("lws"), client.ForceOwnership); err != nil { //nolint:staticcheck // as LWS applies
		t.Fatal(err)
	}
	expectSent(7, "the same apply to a StatefulSet made again by someone else")
}
