// Package external runs `kubectl-llm operator --lws=external` on the simulated cluster beside the
// upstream LeaderWorkerSet manager (sigs.k8s.io/lws/cmd, its controllers and webhooks), as the
// operator's ServiceAccount with the roles `kubectl llm install` (default variant) ships: the
// way the operator runs in a cluster that has LWS installed.
package external

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var (
	cluster  *sim.Cluster
	kc       client.Client
	upstream *sim.UpstreamLWS
	opLog    string
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // the tests skip themselves
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "external:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kubectl-llm-external-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	binary, err := testenv.BuildBinary(dir)
	if err != nil {
		return 0, err
	}
	if cluster, err = sim.Start(ctx); err != nil {
		return 0, fmt.Errorf("start the simulated cluster: %w", err)
	}
	defer cluster.Stop()
	if kc, err = client.New(cluster.Config, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return 0, err
	}
	webhookPort, err := testenv.FreePort()
	if err != nil {
		return 0, err
	}
	lwsProbe, err := testenv.FreePort()
	if err != nil {
		return 0, err
	}
	if upstream, err = cluster.StartUpstreamLWS(ctx, webhookPort, lwsProbe); err != nil {
		return 0, fmt.Errorf("start the upstream LWS manager: %w", err)
	}
	defer upstream.Stop(context.Background())
	if err := cluster.InstallOperatorManifests(ctx, "default"); err != nil {
		return 0, err
	}
	probe, err := testenv.FreePort()
	if err != nil {
		return 0, err
	}
	opLog = filepath.Join(dir, "operator.log")
	log, err := os.Create(opLog)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	op := exec.Command(binary, "operator", "--kubeconfig", cluster.Kubeconfig, "--as", sim.OperatorServiceAccount,
		"--lws=external", "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe))
	op.Stdout, op.Stderr = log, log
	op.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := op.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = op.Process.Signal(syscall.SIGTERM); _ = op.Wait() }()
	if err := waitHTTP(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe), 60*time.Second); err != nil {
		return 0, fmt.Errorf("operator: %w; log:\n%s", err, testenv.LastLinesOf(opLog, 30))
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "---- operator log (last 40 lines) ----\n%s\n---- upstream LWS log (last 40 lines) ----\n%s\n",
			testenv.LastLinesOf(opLog, 40), testenv.LastLinesOf(upstream.Log, 40))
	}
	return code, nil
}

func waitHTTP(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s", url, timeout)
}

func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the simulated cluster and the upstream LWS manager")
	}
}

func serving(ns, name string) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ModelServingSpec{
			Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](2), GroupSize: 2,
			Engine:    v1.EngineSpec{Image: "vllm/vllm-openai:v0.11.0"},
			Resources: v1.ResourceSpec{GPUs: ptr.To[int32](1)},
		},
	}
}

func waitServing(t *testing.T, ns, name, what string, timeout time.Duration, cond func(*v1.ModelServing) bool) *v1.ModelServing {
	t.Helper()
	ms := &v1.ModelServing{}
	testenv.Eventually(t, timeout, what, func() (bool, error) {
		if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
			return false, err
		}
		return cond(ms), nil
	})
	return ms
}

func readyOn(rev string) func(*v1.ModelServing) bool {
	return func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing)
		return ms.Status.Phase == v1.PhaseReady && ms.Status.ObservedGeneration == ms.Generation &&
			(rev == "" || ms.Status.UpdateRevision == rev) && c != nil && c.Reason == v1.ReasonRolloutComplete
	}
}

func servingPods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := kc.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// The upstream manager runs as its own ServiceAccount, bound by its own ClusterRole, as its
// install makes it: not as the cluster's admin, so that what it may do is what a cluster gives
// it, as for the operator.
func TestUpstreamLWSRunsAsItsServiceAccount(t *testing.T) {
	needCluster(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", upstream.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != sim.UpstreamLWSServiceAccount {
		t.Errorf("the upstream manager acts as %q, want %q", got, sim.UpstreamLWSServiceAccount)
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ext-forbidden-"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a namespace as the upstream manager: %v, want forbidden (it is not the admin)", err)
	}
}

// A serving becomes Ready on the upstream LWS: its LeaderWorkerSet passes the upstream
// webhooks, the upstream controllers make its groups, and its pods carry what the upstream pod
// webhook stamps (the group key); then a new image rolls every group, and a lost worker's
// group is recreated.
func TestAServingRunsRollsAndRecoversOnUpstreamLWS(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, kc, "ext-")
	if err := kc.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	first := waitServing(t, ns, "qwen", "Ready on the upstream LWS", 90*time.Second, readyOn(""))
	pods := servingPods(t, ns, "qwen")
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 2 groups × 2", len(pods))
	}
	for _, p := range pods {
		if p.Labels[lwsv1.GroupUniqueHashLabelKey] == "" || p.Labels[lwsv1.SetNameLabelKey] != "qwen" {
			t.Errorf("pod %s labels %v: the upstream LWS pod webhook did not stamp it", p.Name, p.Labels)
		}
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen"}, lws); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(lws); ref == nil || ref.Kind != "ModelServing" {
		t.Errorf("LWS controller = %+v, want the serving", ref)
	}

	// A new image: every group moves to the new revision and the rollout completes.
	ms := first.DeepCopy()
	ms.Spec.Engine.Image = "vllm/vllm-openai:v0.12.0"
	if err := kc.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	rolled := waitServing(t, ns, "qwen", "the new revision rolled out", 120*time.Second, func(ms *v1.ModelServing) bool {
		return ms.Status.UpdateRevision != first.Status.UpdateRevision && readyOn(ms.Status.UpdateRevision)(ms)
	})
	for _, p := range servingPods(t, ns, "qwen") {
		if p.DeletionTimestamp == nil && p.Labels[v1.LabelRevision] != rolled.Status.UpdateRevision {
			t.Errorf("pod %s on revision %s after the rollout, want %s", p.Name, p.Labels[v1.LabelRevision], rolled.Status.UpdateRevision)
		}
	}

	// A lost worker: its group is recreated (leader included) and the serving is Ready again.
	// Upstream LWS recreates the group when its pod controller finds the worker being deleted; a
	// worker already gone by then is not found (its Get ignores NotFound), and only the worker
	// comes back. A kubelet keeps a deleted pod Terminating for its grace period; kwok here
	// removes it within milliseconds, and under CI's load LWS looked only after that (twice in
	// session 17). So the worker is held Terminating by a finalizer of the test's until LWS has
	// deleted its leader, as a kubelet would hold it.
	var leader1 *corev1.Pod
	for _, p := range servingPods(t, ns, "qwen") {
		if p.Name == "qwen-1" {
			leader1 = p.DeepCopy()
		}
	}
	if leader1 == nil {
		t.Fatal("no leader qwen-1")
	}
	worker := &corev1.Pod{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-1-1"}, worker); err != nil {
		t.Fatal(err)
	}
	const terminating = "test.kubectl-llm.dev/terminating"
	setFinalizers := func(finalizers []string) error {
		patch := client.MergeFrom(worker.DeepCopy())
		worker.Finalizers = finalizers
		return kc.Patch(ctx, worker, patch)
	}
	if err := setFinalizers(append(worker.Finalizers, terminating)); err != nil {
		t.Fatal(err)
	}
	if err := kc.Delete(ctx, worker); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "LWS deleting group 1's leader for its terminating worker", func() (bool, error) {
		l := &corev1.Pod{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-1"}, l); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		return l.UID != leader1.UID || l.DeletionTimestamp != nil, nil
	})
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-1-1"}, worker); err == nil {
		if err := setFinalizers(slices.DeleteFunc(slices.Clone(worker.Finalizers), func(f string) bool { return f == terminating })); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "group 1 recreated with a new leader and Ready", func() (bool, error) {
		l := &corev1.Pod{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen-1"}, l); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ms := &v1.ModelServing{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen"}, ms); err != nil {
			return false, err
		}
		return l.UID != leader1.UID && ms.Status.ReadyReplicas == 2, nil
	})
}
