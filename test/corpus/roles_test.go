package corpus_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The shipped edit role lets a namespace's editors create and scale servings but not write their
// status (the operator's); the view role only reads. (The built-in edit/view/admin roles pick
// them up by their aggregation labels, through kube-controller-manager, which envtest lacks: the
// test binds them directly.)
func TestTheShippedRolesGrantWhatTheySay(t *testing.T) {
	ctx := context.Background()
	roles := installRoles(t)
	for name, label := range map[string]string{
		"kubectl-llm-modelserving-edit": "rbac.authorization.k8s.io/aggregate-to-edit",
		"kubectl-llm-modelserving-view": "rbac.authorization.k8s.io/aggregate-to-view",
	} {
		if roles[name].Labels[label] != "true" {
			t.Errorf("ClusterRole %s lacks the label %s=true", name, label)
		}
	}
	ns := testenv.Namespace(t, env.Client, "roles-")
	bind := func(user, role string) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if err := env.Client.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	bind("alice", "kubectl-llm-modelserving-edit")
	bind("bob", "kubectl-llm-modelserving-view")
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := as("alice"), as("bob")
	ms := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m"}}
	if err := alice.Create(ctx, ms); err != nil {
		t.Fatalf("an editor cannot create a serving: %v", err)
	}
	ms.Status.Phase = v1.PhaseReady
	if err := alice.Status().Update(ctx, ms); !apierrors.IsForbidden(err) {
		t.Errorf("an editor wrote a status: %v, want forbidden", err)
	}
	var list v1.ModelServingList
	if err := bob.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Errorf("a viewer cannot list servings: %d, %v", len(list.Items), err)
	}
	other := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}, Spec: v1.ModelServingSpec{Model: "m"}}
	if err := bob.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("a viewer created a serving: %v, want forbidden", err)
	}
	if err := alice.List(ctx, &list, client.InNamespace("default")); !apierrors.IsForbidden(err) {
		t.Errorf("the role reached beyond its namespace: %v, want forbidden", err)
	}
}

func installRoles(t *testing.T) map[string]*rbacv1.ClusterRole {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "config", "rbac", "modelserving-roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	out := map[string]*rbacv1.ClusterRole{}
	for {
		cr := &rbacv1.ClusterRole{}
		if err := dec.Decode(cr); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if err := env.Client.Create(context.Background(), cr); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		out[cr.Name] = cr
	}
	return out
}
