package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a namespace being deleted still holds of a kind: how many objects, how many of them being
// deleted, how many carrying finalizers (a serving whose finalizer is still on holds the
// namespace controller 8 s a pass).
func TestKindContentCountsTheDeletedAndThoseWithFinalizers(t *testing.T) {
	now := metav1.Now()
	items := []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &now, Finalizers: []string{"serving.kubectl-llm.dev/children"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"serving.kubectl-llm.dev/children"}}},
	}
	if got, want := kindContent("ModelServings", items), "ModelServings 3 (deleting 1, with finalizers 2)"; got != want {
		t.Errorf("kindContent = %q, want %q", got, want)
	}
	if got := kindContent("pods", nil); got != "" {
		t.Errorf("kindContent of none = %q, want it left out", got)
	}
}

// Where a namespace's deletion went, read from kube-controller-manager's log as its namespace
// controller writes it at -v 5: each pass, its slow collections in order, and how it ended.
func TestNamespacePassesFromTheControllerManagersLog(t *testing.T) {
	const ns = "kubectl-llm-burst-22ghh"
	log := []string{
		`I1207 01:57:28.061403    2041 namespaced_resources_deleter.go:111] "Namespace controller - syncNamespace" namespace="kubectl-llm-burst-22ghh" finalizerToken="kubernetes"`,
		`I1207 01:57:28.100000    2041 namespaced_resources_deleter.go:311] "Namespace controller - deleteCollection" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=pods"`,
		`I1207 01:57:31.700000    2041 namespaced_resources_deleter.go:442] "Namespace controller - deleteAllContentForGroupVersionResource - checking for no more items in namespace" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=pods"`,
		`I1207 01:57:31.911014    2041 namespace_controller.go:182] "Finished syncing namespace" namespace="kubectl-llm-burst-22ghh" duration="3.872895181s"`,
		`I1207 01:57:31.911049    2041 namespace_controller.go:159] "Content remaining in namespace" namespace="kubectl-llm-burst-22ghh" waitSeconds=16`,
		`I1207 01:57:32.000000    2041 namespaced_resources_deleter.go:111] "Namespace controller - syncNamespace" namespace="other" finalizerToken="kubernetes"`,
		`I1207 01:57:36.917162    2041 namespaced_resources_deleter.go:111] "Namespace controller - syncNamespace" namespace="kubectl-llm-burst-22ghh" finalizerToken="kubernetes"`,
		`I1207 01:57:37.003137    2041 namespaced_resources_deleter.go:311] "Namespace controller - deleteCollection" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=pods"`,
		`I1207 01:57:37.060538    2041 namespaced_resources_deleter.go:442] "Namespace controller - deleteAllContentForGroupVersionResource - checking for no more items in namespace" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=pods"`,
		`I1207 01:57:50.796402    2041 namespaced_resources_deleter.go:311] "Namespace controller - deleteCollection" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=events"`,
		`I1207 01:58:10.112930    2041 namespaced_resources_deleter.go:442] "Namespace controller - deleteAllContentForGroupVersionResource - checking for no more items in namespace" namespace="kubectl-llm-burst-22ghh" resource="/v1, Resource=events"`,
		`I1207 01:58:11.574996    2041 namespace_controller.go:182] "Finished syncing namespace" namespace="kubectl-llm-burst-22ghh" duration="34.663121865s"`,
		`E1207 01:58:12.000000    2041 namespace_controller.go:164] "Deletion of namespace failed" err="unexpected items still remain in namespace" logger="UnhandledError" namespace="kubectl-llm-burst-22ghh"`,
		`not a klog line namespace="kubectl-llm-burst-22ghh"`,
	}
	passes := namespacePasses(log, ns, 2026)
	if len(passes) != 2 {
		t.Fatalf("passes = %d, want 2 (the other namespace's left out): %+v", len(passes), passes)
	}
	if got := passes[1].collections; len(got) != 2 || got[1].resource != "events" || got[1].took.Round(time.Millisecond) != 19317*time.Millisecond {
		t.Errorf("second pass's collections = %+v, want pods, then events in 19.317s", got)
	}
	deleted := time.Date(2026, 12, 7, 1, 57, 23, 0, time.Local)
	want := "pass at +5.1s (3.8s): pods 3.6s; content remained, next look in 16s at most; " +
		"pass at +13.9s (34.7s): events 19.3s, 1 more under 0.5s; failed: unexpected items still remain in namespace"
	if got := describePasses(passes, deleted, 500*time.Millisecond); got != want {
		t.Errorf("describePasses =\n%s\nwant\n%s", got, want)
	}
	if got := describePasses(nil, deleted, time.Second); !strings.Contains(got, "no pass") {
		t.Errorf("describePasses of none = %q, want it to say there is no pass", got)
	}
}

// The slowest of a side's namespace deletions is named with where it went.
func TestSlowestNamespaceIsTheLongestWithWhereItWent(t *testing.T) {
	got := slowestNamespace([]time.Duration{20 * time.Second, 50 * time.Second, 30 * time.Second}, []string{"a", "b", "c"})
	if want := "50.0s: b"; got != want {
		t.Errorf("slowestNamespace = %q, want %q", got, want)
	}
	if got := slowestNamespace(nil, nil); got != "" {
		t.Errorf("slowestNamespace of none = %q, want \"\"", got)
	}
}
