package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
)

func TestInstallDryRunRendersTheManifests(t *testing.T) {
	r := run(t, time.Now(), "install", "--lws=external", "--dry-run=client", "-o", "yaml", "--image", "registry.example.com/kubectl-llm:v1")
	expectCode(t, r, 0)
	for _, want := range []string{"kind: CustomResourceDefinition", "name: modelservings.serving.kubectl-llm.dev", "kind: Deployment",
		"image: registry.example.com/kubectl-llm:v1", "---\napiVersion: "} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("rendered manifests lack %q", want)
		}
	}
	if strings.Contains(r.Out, "leaderworkersets.leaderworkerset.x-k8s.io") {
		t.Error("--lws=external rendered the LeaderWorkerSet CRD")
	}
}

// TestInstallThenUninstallLeavesNothingBehind runs against a second, bare control plane: no CRDs
// at all, as a fresh cluster. It also checks uninstall refuses to strand a serving's finalizer.
func TestInstallThenUninstallLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	c, on := bareControlPlane(t)

	r := on("get")
	expectCode(t, r, 1)
	if r.Err != "error: the ModelServing API (modelservings.serving.kubectl-llm.dev/v1alpha1) is not installed in this cluster: run kubectl llm install\n" {
		t.Errorf("before install: %q", r.Err)
	}

	// The operator does not start where its API is not served: with the admin's rights (the CRD
	// is read) and as a user who may not read CRDs, as the operator's ServiceAccount (discovery).
	for _, as := range [][]string{nil, {"--as", "nobody"}} {
		r = on(append(as, "operator", "--lws=external", "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")...)
		expectCode(t, r, 1)
		if !strings.Contains(r.Err, "error: the ModelServing API is not served by the cluster at ") ||
			!strings.Contains(r.Err, "modelservings.serving.kubectl-llm.dev is not installed): run kubectl llm install") {
			t.Errorf("operator %v before install: %q", as, r.Err)
		}
	}

	r = on("install")
	expectCode(t, r, 0)
	golden(t, "install", "stdout:\n"+r.Out+"stderr:\n"+r.Err)
	r = on("install") // idempotent
	expectCode(t, r, 0)
	r = on("version")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "Operator: ghcr.io/kubectl-llm/kubectl-llm:dev (0/2 ready)\n") ||
		!strings.Contains(r.Out, "LeaderWorkerSet API: v1 served") {
		t.Errorf("version after install:\n%s", r.Out)
	}

	// A serving whose finalizer nobody removes (no operator runs here) stops uninstall early.
	expectCode(t, on("deploy", "stuck", "--model", "Qwen/Qwen3-0.6B"), 0)
	stuck := &v1.ModelServing{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "stuck"}, stuck); err != nil {
		t.Fatal(err)
	}
	stuck.Finalizers = []string{v1.FinalizerChildren}
	if err := c.Update(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	r = on("uninstall", "--yes", "--timeout", "2s")
	expectCode(t, r, cli.ExitTimedOut)
	if !strings.Contains(r.Err, "1 serving(s) still exist after 2s: default/stuck (finalizers serving.kubectl-llm.dev/children)") ||
		!strings.Contains(r.Err, "Not removing the operator or the CRDs") {
		t.Errorf("uninstall with a stuck serving: %q", r.Err)
	}
	for _, obj := range installedObjects(t) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()); err != nil {
			t.Errorf("uninstall removed %s %s although a serving was stuck: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stuck), stuck); err != nil {
		t.Fatal(err)
	}
	stuck.Finalizers = nil
	if err := c.Update(ctx, stuck); err != nil {
		t.Fatal(err)
	}

	expectCode(t, on("deploy", "plain", "--model", "Qwen/Qwen3-0.6B"), 0)
	r = on("uninstall", "--yes")
	expectCode(t, r, 0)
	golden(t, "uninstall", r.Out)
	for _, obj := range installedObjects(t) {
		live := obj.DeepCopy()
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case apierrors.IsNotFound(err):
		case err == nil && obj.GetKind() == "Namespace" && live.GetDeletionTimestamp() != nil:
			// Terminating: only a namespace controller (absent here) finishes it.
		default:
			t.Errorf("%s %s left behind (err %v)", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// installedObjects are the objects `install` printed in the golden file, as keys to look up.
func installedObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	add := func(apiVersion, kind, ns, name string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		out = append(out, u)
	}
	add("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "modelservings.serving.kubectl-llm.dev")
	add("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "leaderworkersets.leaderworkerset.x-k8s.io")
	add("v1", "Namespace", "", "kubectl-llm-system")
	add("v1", "ServiceAccount", "kubectl-llm-system", "kubectl-llm-operator")
	add("rbac.authorization.k8s.io/v1", "ClusterRole", "", "kubectl-llm-operator")
	add("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "kubectl-llm-operator")
	add("apps/v1", "Deployment", "kubectl-llm-system", "kubectl-llm-operator")
	return out
}
