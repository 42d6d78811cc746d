package operator

import (
	"bytes"
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

func TestLWSPointNamesTheWriteAndTheServing(t *testing.T) {
	set := func(name string) map[string]string { return map[string]string{lwsv1.SetNameLabelKey: name} }
	cases := []struct {
		verb, suffix string
		obj          client.Object
		point, key   string
	}{
		{"create", "", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen", Labels: set("qwen")}},
			"lws-after-create-leader-statefulset", "ns/qwen"},
		{"create", "", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-1", Labels: set("qwen")}},
			"lws-after-create-worker-statefulset", "ns/qwen"},
		{"update", "-status", &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen"}},
			"lws-after-update-leaderworkerset-status", "ns/qwen"},
		// A role's LeaderWorkerSet belongs to the serving it is named after.
		{"create", "", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-prefill-0", Labels: set("qwen-prefill")}},
			"lws-after-create-worker-statefulset", "ns/qwen"},
		{"delete", "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-0", Labels: set("qwen")}},
			"lws-after-delete-pod", "ns/qwen"},
		{"create", "", &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-abc", Labels: set("qwen")}},
			"lws-after-create-controllerrevision", "ns/qwen"},
		// Typed or not, the kind is the object's.
		{"create", "", unstructuredSTS("ns", "qwen-0", "qwen"), "lws-after-create-worker-statefulset", "ns/qwen"},
		// Not an object of a LeaderWorkerSet: no point.
		{"create", "", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}}, "", ""},
	}
	for _, tc := range cases {
		point, key := lwsPoint(tc.verb, tc.suffix, tc.obj, scheme.New())
		if point != tc.point || key != tc.key {
			t.Errorf("%s%s of %T %s: %q for %q, want %q for %q", tc.verb, tc.suffix, tc.obj, tc.obj.GetName(), point, key, tc.point, tc.key)
		}
	}
}

func unstructuredSTS(ns, name, set string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{lwsv1.SetNameLabelKey: set})
	_ = unstructured.SetNestedField(u.Object, map[string]any{"matchLabels": map[string]any{lwsv1.SetNameLabelKey: set}}, "spec", "selector")
	return u
}

func TestLWSClientHasNoFailpointClientWithoutAFailpoint(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	lc, applies := lwsClient(c, c, c, failpoint.Set{})
	got, ok := lc.(oneRevisionPerTemplate)
	if !ok || got.Client != client.Client(applies) || applies.Client != c {
		t.Fatalf("without a failpoint the LWS controllers get %#v, not the manager's client behind unchangedApplies and oneRevisionPerTemplate", lc)
	}
}

// lwsRevision is a ControllerRevision as the LWS controller records its template.
func lwsRevision(name string, number int64, key, data string, owner types.UID) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{lwsv1.SetNameLabelKey: "qwen", lwsv1.RevisionKey: key},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet",
				Name: "qwen", UID: owner, Controller: ptr.To(true)}}},
		Data:     runtime.RawExtension{Raw: []byte(data)},
		Revision: number,
	}
}

func TestTheEmbeddedLWSRecordsATemplateOnce(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	lc, _ := lwsClient(c, c, c, failpoint.Set{})
	if err := lc.Create(ctx, lwsRevision("qwen-aaa-1", 1, "aaa", `{"a":1}`, "lws-1")); err != nil {
		t.Fatal(err)
	}
	// The pass after a kill between the revision and the leader StatefulSet: the same template
	// under the next number. It gets the recorded one.
	again := lwsRevision("qwen-aaa-2", 2, "aaa", `{"a":1}`, "lws-1")
	if err := lc.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again.Name != "qwen-aaa-1" || again.Revision != 1 {
		t.Errorf("the second record of the template came back as %s (revision %d), want qwen-aaa-1 (1)", again.Name, again.Revision)
	}
	// Another template, another LeaderWorkerSet of the same name (a new UID), or other data under
	// the key: recorded as asked.
	for _, rev := range []*appsv1.ControllerRevision{
		lwsRevision("qwen-bbb-2", 2, "bbb", `{"a":2}`, "lws-1"),
		lwsRevision("qwen-aaa-3", 3, "aaa", `{"a":1}`, "lws-2"),
		lwsRevision("qwen-aaa-4", 4, "aaa", `{"a":3}`, "lws-1"),
	} {
		if err := lc.Create(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	if want := []string{"qwen-aaa-1", "qwen-aaa-3", "qwen-aaa-4", "qwen-bbb-2"}; !slices.Equal(names, want) {
		t.Errorf("revisions %v, want %v", names, want)
	}
}

// stopsAt runs write through the LWS client with point set for ns/qwen and reports whether the
// process would have stopped.
func stopsAt(t *testing.T, c client.Client, point string, write func(client.Client) error) bool {
	t.Helper()
	stopped := false
	var log bytes.Buffer
	fc, _ := lwsClient(c, c, c, failpoint.Parse(point+"@ns/qwen", func(int) { stopped = true }, &log))
	if err := write(fc); err != nil {
		t.Fatal(err)
	}
	return stopped
}

func TestLWSClientStopsAfterWritesThatWentThroughAndChangedSomething(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithStatusSubresource(&lwsv1.LeaderWorkerSet{}).Build()

	// The worker StatefulSet LWS creates for a leader pod (unstructured, as LWS sends it).
	if !stopsAt(t, c, "lws-after-create-worker-statefulset", func(fc client.Client) error {
		return fc.Create(ctx, unstructuredSTS("ns", "qwen-0", "qwen"))
	}) {
		t.Error("no stop after the worker StatefulSet was created")
	}
	// A create that failed (it exists) stops nothing.
	if stopsAt(t, c, "lws-after-create-worker-statefulset", func(fc client.Client) error {
		if err := fc.Create(ctx, unstructuredSTS("ns", "qwen-0", "qwen")); err == nil {
			t.Error("the second create went through")
		}
		return nil
	}) {
		t.Error("a create that failed stopped the process")
	}
	// Another serving's write does not stop at a point scoped to ns/qwen.
	if stopsAt(t, c, "lws-after-create-worker-statefulset", func(fc client.Client) error {
		return fc.Create(ctx, unstructuredSTS("ns", "llama-0", "llama"))
	}) {
		t.Error("a write of another serving stopped the process")
	}

	// A merge patch that changes the object is an update; one that changes nothing is not.
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "qwen-0"}, sts); err != nil {
		t.Fatal(err)
	}
	if !stopsAt(t, c, "lws-after-update-worker-statefulset", func(fc client.Client) error {
		base := sts.DeepCopy()
		sts.Spec.Replicas = ptr.To[int32](3)
		return fc.Patch(ctx, sts, client.MergeFrom(base))
	}) {
		t.Error("no stop after a patch that changed the worker StatefulSet")
	}
	// The API server answers a patch that changes nothing with the object as it was (the fake
	// client would move the version anyway).
	unchanged := interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
			return c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		},
	})
	if stopsAt(t, unchanged, "lws-after-update-worker-statefulset", func(fc client.Client) error {
		return fc.Patch(ctx, sts, client.MergeFrom(sts.DeepCopy()))
	}) {
		t.Error("a patch that changed nothing stopped the process")
	}

	// The leader StatefulSet, server-side applied: the apply that makes it is a create, the next
	// one that changes it an update, one that changes nothing neither.
	leader := func(replicas int64) *unstructured.Unstructured {
		u := unstructuredSTS("ns", "qwen", "qwen")
		_ = unstructured.SetNestedField(u.Object, replicas, "spec", "replicas")
		return u
	}
	apply := func(replicas int64) func(client.Client) error {
		return func(fc client.Client) error {
			return fc.Patch(ctx, leader(replicas), client.Apply, client.FieldOwner("lws"), client.ForceOwnership) //nolint:staticcheck // as LWS applies
		}
	}
	if !stopsAt(t, c, "lws-after-create-leader-statefulset", apply(2)) {
		t.Error("no stop after the apply that made the leader StatefulSet")
	}
	if stopsAt(t, c, "lws-after-create-leader-statefulset", apply(3)) {
		t.Error("an apply of an existing leader StatefulSet counted as its creation")
	}
	if !stopsAt(t, c, "lws-after-update-leader-statefulset", apply(4)) {
		t.Error("no stop after an apply that changed the leader StatefulSet")
	}
	if stopsAt(t, unchanged, "lws-after-update-leader-statefulset", apply(4)) {
		t.Error("an apply that changed nothing stopped the process")
	}

	// The LeaderWorkerSet's status, written by its controller.
	lws := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen"}}
	if err := c.Create(ctx, lws); err != nil {
		t.Fatal(err)
	}
	if !stopsAt(t, c, "lws-after-update-leaderworkerset-status", func(fc client.Client) error {
		lws.Status.Replicas = 2
		return fc.Status().Update(ctx, lws)
	}) {
		t.Error("no stop after the LeaderWorkerSet's status was written")
	}

	// A leader pod deleted to recreate its group.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen-0", Labels: map[string]string{lwsv1.SetNameLabelKey: "qwen"}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if !stopsAt(t, c, "lws-after-delete-pod", func(fc client.Client) error { return fc.Delete(ctx, pod) }) {
		t.Error("no stop after the pod was deleted")
	}
}
