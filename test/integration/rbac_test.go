package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/config"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// operatorUser is the operator's ServiceAccount as the authorizer sees it.
var operatorUser = authorizationv1.SubjectAccessReviewSpec{
	User:   "system:serviceaccount:kubectl-llm-system:kubectl-llm-operator",
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kubectl-llm-system", "system:authenticated"},
}

// access is one request the operator's ServiceAccount makes (or must not be able to make).
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.name != "" {
		r += "/" + a.name
	}
	if a.namespace != "" {
		r += " in " + a.namespace
	}
	return a.verb + " " + r
}

// installObjects are the objects of an install variant's render.
func installObjects(t *testing.T, variant string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := config.Manifests(variant)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// installRBAC applies the namespace, ServiceAccount, roles and bindings of an install variant.
func installRBAC(t *testing.T, ctx context.Context, variant string) {
	t.Helper()
	objs := installObjects(t, variant)
	n := 0
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner(v1.FieldManager), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			n++
		}
	}
	if n < 6 {
		t.Fatalf("the %s install holds %d RBAC objects; want the namespace, ServiceAccount, roles and bindings", variant, n)
	}
}

func allowed(t *testing.T, ctx context.Context, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: operatorUser}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
	}
	if err := env.Client.Create(ctx, sar); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	return sar.Status.Allowed
}

// The shipped roles, bound to the operator's ServiceAccount, allow what the operator and the
// embedded LWS do and nothing of what a shared cluster must keep from them.
func TestTheOperatorsRolesAreLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	installRBAC(t, ctx, "embedded")
	const ns = "tenant-a"
	needed := []access{
		{"watch", v1.GroupVersion.Group, "modelservings", "", "", ""},
		{"update", v1.GroupVersion.Group, "modelservings", "finalizers", ns, "x"},
		{"patch", v1.GroupVersion.Group, "modelservings", "status", ns, "x"},
		{"patch", "leaderworkerset.x-k8s.io", "leaderworkersets", "", ns, "x"},
		{"update", "leaderworkerset.x-k8s.io", "leaderworkersets", "status", ns, "x"},
		{"update", "leaderworkerset.x-k8s.io", "leaderworkersets", "finalizers", ns, "x"},
		{"create", "apps", "statefulsets", "", ns, ""},
		{"create", "apps", "controllerrevisions", "", ns, ""},
		{"patch", "", "services", "", ns, "x-api"},
		{"watch", "", "pods", "", "", ""},
		{"watch", "", "namespaces", "", "", ""},         // the servings of a namespace being deleted are left alone
		{"delete", "", "pods", "", ns, "x-0"},           // LWS recreates a group by deleting its leader
		{"update", "", "pods", "finalizers", ns, "x-0"}, // worker StatefulSets are owned by the leader pod
		{"list", "", "nodes", "", "", ""},               // exclusive topology
		{"get", "", "nodes", "", "", "gpu-node-0"},
		{"create", "", "events", "", ns, ""},
		{"get", "coordination.k8s.io", "leases", "", "kubectl-llm-system", "kubectl-llm-operator"},
		{"update", "coordination.k8s.io", "leases", "", "kubectl-llm-system", "kubectl-llm-operator"},
		{"create", "coordination.k8s.io", "leases", "", "kubectl-llm-system", ""},
		{"patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "kubectl-llm-lws"},
		{"patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", "kubectl-llm-lws"},
		{"watch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", ""}, // the cert rotator's informer
		{"update", "", "secrets", "", "kubectl-llm-system", "kubectl-llm-webhook-certs"},
		{"watch", "", "secrets", "", "kubectl-llm-system", ""},
	}
	forbidden := []access{
		{"create", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", ""},
		{"create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", ""},
		{"patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "someone-elses-webhook"},
		{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", "someone-elses-webhook"},
		{"delete", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "kubectl-llm-lws"},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"},
		{"update", "coordination.k8s.io", "leases", "", "kube-node-lease", "gpu-node-0"},
		{"create", "coordination.k8s.io", "leases", "", "default", ""},
		{"create", "", "pods", "", "kube-system", ""},
		{"create", "", "pods", "", ns, ""},
		{"update", "", "pods", "", ns, "x-0"},
		{"patch", "", "pods", "status", ns, "x-0"},
		{"create", "", "pods", "exec", ns, "x-0"},
		{"get", "", "secrets", "", ns, "x"},
		{"list", "", "secrets", "", "", ""},
		{"create", "", "secrets", "", "kubectl-llm-system", ""},
		{"delete", "", "secrets", "", "kubectl-llm-system", "kubectl-llm-webhook-certs"},
		{"get", "", "secrets", "", "kube-system", "x"},
		{"update", "", "nodes", "", "", "gpu-node-0"},
		{"update", "", "configmaps", "", "kube-system", "kube-proxy"},
		{"delete", "", "persistentvolumeclaims", "", ns, "model-cache"},
		{"create", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "", ns, ""},
		{"update", "apps", "deployments", "", "kube-system", "coredns"},
		{"delete", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "leaderworkersets.leaderworkerset.x-k8s.io"},
		{"create", "serving.kubectl-llm.dev", "modelservings", "", ns, ""}, // the operator never makes servings
		{"impersonate", "", "serviceaccounts", "", "kube-system", "default"},
	}
	var wrong []string
	// The authorizer learns of new roles and bindings through its informers: give it a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		wrong = nil
		for _, a := range needed {
			if !allowed(t, ctx, a) {
				wrong = append(wrong, "forbidden but needed: "+a.String())
			}
		}
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, a := range forbidden {
		if allowed(t, ctx, a) {
			wrong = append(wrong, "allowed but must be forbidden: "+a.String())
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("the operator's ServiceAccount, with the roles of the embedded install:\n%s", strings.Join(wrong, "\n"))
	}
	t.Logf("%d requests allowed, %d forbidden, as expected", len(needed), len(forbidden))
}

// Applying the install again (its webhook configurations carry no webhooks) leaves the webhooks
// the operator filled in: the two have different field managers.
func TestReinstallKeepsTheWebhooksTheOperatorFilledIn(t *testing.T) {
	ctx := context.Background()
	objs := installObjects(t, "embedded")
	key := client.ObjectKey{Name: "kubectl-llm-lws"}
	mwc := &admissionv1.MutatingWebhookConfiguration{}
	testenv.Eventually(t, 30*time.Second, "the operator's webhooks", func() (bool, error) {
		if err := env.Client.Get(ctx, key, mwc); err != nil {
			return false, err
		}
		return len(mwc.Webhooks) == 2, fmt.Errorf("%d webhooks", len(mwc.Webhooks))
	})
	n := 0
	for _, u := range objs {
		if strings.HasSuffix(u.GetKind(), "WebhookConfiguration") {
			if hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks"); len(hooks) > 0 {
				t.Fatalf("the install ships %s with webhooks; the operator fills them in", u.GetKind())
			}
			if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner(v1.FieldManager), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the embedded install ships %d webhook configurations, want 2", n)
	}
	if err := env.Client.Get(ctx, key, mwc); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, key, vwc); err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 2 || len(vwc.Webhooks) != 2 {
		t.Fatalf("after re-applying the install: %d mutating and %d validating webhooks, want 2 and 2", len(mwc.Webhooks), len(vwc.Webhooks))
	}
}
