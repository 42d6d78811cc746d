package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// Where LeaderWorkerSet is installed by someone else (the shared control plane has the LWS CRD,
// applied without kubectl llm), an embedded install is refused before anything is applied.
func TestAnEmbeddedInstallIsRefusedWhereLWSIsInstalled(t *testing.T) {
	r := run(t, time.Now(), "install", "--lws=embedded")
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, "LeaderWorkerSet is already installed in this cluster") || !strings.Contains(r.Err, "--lws=external") {
		t.Errorf("install --lws=embedded over someone else's LWS: %q", r.Err)
	}
	if r.Out != "" {
		t.Errorf("a refused install applied: %q", r.Out)
	}
	// A render never asks the cluster and is not refused.
	expectCode(t, run(t, time.Now(), "install", "--lws=embedded", "--dry-run=client", "-o", "name"), 0)
}

// Without a terminal to ask on, uninstall says what it would delete and refuses without --yes;
// nothing is deleted.
func TestUninstallWithoutYesInAScriptDeletesNothing(t *testing.T) {
	// The namespace sorts before every other test's: uninstall names the first 10 servings of the
	// shared control plane ("and N more"), and the other tests leave theirs behind.
	ns := namespace(t, "a-uninstall-ask")
	expectCode(t, run(t, time.Now(), "-n", ns, "deploy", "kept", "--model", "Qwen/Qwen3-0.6B"), 0)
	r := run(t, time.Now(), "uninstall")
	expectCode(t, r, 1)
	for _, want := range []string{"kubectl llm uninstall will delete:", ns + "/kept", "the ModelServing CRD", "pass --yes to confirm"} {
		if !strings.Contains(r.Err, want) {
			t.Errorf("uninstall without --yes: stderr lacks %q:\n%s", want, r.Err)
		}
	}
	if r.Out != "" {
		t.Errorf("uninstall without --yes printed %q on stdout", r.Out)
	}
	expectCode(t, run(t, time.Now(), "-n", ns, "get", "kept"), 0)
}

// uninstall keeps a LeaderWorkerSet CRD it installed while LeaderWorkerSets it did not make use it.
func TestUninstallKeepsTheLWSCRDWhileOthersUseIt(t *testing.T) {
	ctx := context.Background()
	c, on := bareControlPlane(t)
	expectCode(t, on("install", "--lws=embedded", "--image", "registry.example.com/kubectl-llm:v1"), 0)
	theirs := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "default"},
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To[int32](1), StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
			RolloutStrategy: lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType}, LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				Size:           ptr.To[int32](1),
				WorkerTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
			}},
	}
	if err := c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	r := on("uninstall", "--yes")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "customresourcedefinition.apiextensions.k8s.io/leaderworkersets.leaderworkerset.x-k8s.io kept (1 LeaderWorkerSet(s) that kubectl llm did not make use it: default/theirs)") {
		t.Errorf("uninstall with someone else's LeaderWorkerSet:\n%s", r.Out)
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: "leaderworkersets.leaderworkerset.x-k8s.io"}, crd); err != nil || crd.GetDeletionTimestamp() != nil {
		t.Errorf("the LeaderWorkerSet CRD was deleted under someone else's LeaderWorkerSet (err %v)", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(theirs), theirs); err != nil {
		t.Errorf("their LeaderWorkerSet: %v", err)
	}
}

// bareControlPlane starts a control plane of the test's own with no CRDs at all, as a fresh
// cluster: a client for it, and a runner of the command tree against it.
func bareControlPlane(t *testing.T) (client.Client, func(args ...string) result) {
	t.Helper()
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	bare := &envtest.Environment{BinaryAssetsDirectory: assets, Scheme: testenv.Scheme()}
	cfg, err := bare.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kc, cfg); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, func(args ...string) result {
		return runTo(context.Background(), &syncBuffer{}, time.Now(), "", append([]string{"--kubeconfig", kc}, args...)...)
	}
}
