// Package integration runs the operator with LeaderWorkerSet embedded (its reconcilers and webhooks
// hosted in our manager) against a real API server. It has a control plane of its own because the
// webhook configurations it installs apply to the whole API server.
package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var (
	env         *testenv.Env
	webhookPort int // where the embedded LWS webhooks listen
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startEmbedded(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	<-done
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

// startEmbedded runs the operator as `kubectl llm operator --lws=auto` would outside the cluster:
// the API server has no LWS controller, so auto must pick embedded.
func startEmbedded(ctx context.Context) (<-chan struct{}, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElect = false
	opts.LWS = operator.LWSAuto
	opts.Registry = prometheus.NewRegistry()
	opts.Webhook.Port, webhookPort = port, port
	opts.Webhook.BindHost, opts.Webhook.URLHost = "127.0.0.1", "127.0.0.1"
	mgr, err := operator.NewManager(ctx, env.Config, opts)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return done, nil
}

func namespace(t *testing.T) string { return testenv.Namespace(t, env.Client, "lws-") }

func bareLWS(ns, name string) *lwsv1.LeaderWorkerSet {
	return &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:      ptr.To[int32](1),
			StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				Size:           ptr.To[int32](2),
				WorkerTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
			},
		},
	}
}

func TestTheEmbeddedLWSWebhooksDefaultAndValidate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lws := bareLWS(ns, "plain")
	// The webhook server may still be starting: creation is refused until it answers.
	took := testenv.Eventually(t, 30*time.Second, "the LWS webhook to answer", func() (bool, error) {
		err := env.Client.Create(ctx, lws.DeepCopy())
		return err == nil, err
	})
	t.Logf("LWS admission answered %s after the test began", took)
	got := &lwsv1.LeaderWorkerSet{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plain"}, got); err != nil {
		t.Fatal(err)
	}
	ru := got.Spec.RolloutStrategy.RollingUpdateConfiguration
	if got.Spec.RolloutStrategy.Type != lwsv1.RollingUpdateStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 1 ||
		got.Spec.NetworkConfig == nil || got.Spec.LeaderWorkerTemplate.RestartPolicy != lwsv1.RecreateGroupOnPodRestart {
		t.Fatalf("the LWS was not defaulted by the LWS webhook: %+v", got.Spec)
	}

	bad := bareLWS(ns, "bad")
	bad.Spec.RolloutStrategy = lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType, RollingUpdateConfiguration: &lwsv1.RollingUpdateConfiguration{
		MaxSurge: intstr.FromInt32(0), MaxUnavailable: intstr.FromInt32(0)}}
	err := env.Client.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "vleaderworkerset.kubectl-llm.dev") {
		t.Fatalf("an LWS with maxSurge 0 and maxUnavailable 0: got %v, want a refusal by the embedded validating webhook", err)
	}
}

func TestAServingGetsItsLeaderStatefulSetFromTheEmbeddedLWS(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	ms := &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns},
		Spec:       v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](2), GroupSize: 2, Resources: v1.ResourceSpec{GPUs: ptr.To[int32](1)}},
	}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	took := testenv.Eventually(t, 60*time.Second, "the leader StatefulSet", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen"}, sts)
		return err == nil, err
	})
	t.Logf("leader StatefulSet made %s after the ModelServing", took)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 2 {
		t.Errorf("leader StatefulSet replicas = %v, want 2 (one leader per group)", sts.Spec.Replicas)
	}
	tmpl := sts.Spec.Template
	if tmpl.Labels[v1.LabelName] != "qwen" || tmpl.Labels[lwsv1.SetNameLabelKey] != "qwen" {
		t.Errorf("leader pod template labels = %v, want ours and LWS's", tmpl.Labels)
	}
	if c := tmpl.Spec.Containers[0]; c.Name != naming.EngineContainer || c.ReadinessProbe == nil {
		t.Errorf("leader pod template lost the engine container: %+v", c)
	}
	// The headless Service LWS makes for the group's pod DNS names, next to ours (LWS makes it
	// after the leader StatefulSet, in the same pass).
	testenv.Eventually(t, 30*time.Second, "the LWS headless Service", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qwen"}, &corev1.Service{})
		return err == nil, err
	})
	// The serving's own Service, which the operator's Service maker creates beside the passes
	// (not in the pass that applies the LeaderWorkerSet): it can come after LWS's.
	testenv.Eventually(t, 30*time.Second, "the serving's Service", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ServiceName("qwen")}, &corev1.Service{})
		return err == nil, err
	})
}

// The embedded LWS leaves a namespace being deleted alone: everything in it goes, the API server
// makes nothing new there, and LWS's passes there only tried to make again what the namespace
// controller had just deleted (11 StatefulSet applies per LeaderWorkerSet where LWS alone made
// 4.6 in the scale harness). The API server here has no namespace controller: a deleted
// namespace stays Terminating with its objects, and a LeaderWorkerSet scaled there shows whether
// the embedded LWS still acts on it. The same scale of a LeaderWorkerSet in a live namespace,
// made after it, shows that it acts elsewhere.
func TestTheEmbeddedLWSLeavesANamespaceBeingDeletedAlone(t *testing.T) {
	ctx := context.Background()
	going, live := namespace(t), namespace(t)
	for _, ns := range []string{going, live} {
		testenv.Eventually(t, 30*time.Second, "the LWS webhook to answer", func() (bool, error) {
			err := env.Client.Create(ctx, bareLWS(ns, "set"))
			return err == nil, err
		})
		testenv.Eventually(t, 60*time.Second, "the leader StatefulSet in "+ns, func() (bool, error) {
			err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "set"}, &appsv1.StatefulSet{})
			return err == nil, err
		})
	}
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: going}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the namespace Terminating", func() (bool, error) {
		ns := &corev1.Namespace{}
		err := env.Client.Get(ctx, types.NamespacedName{Name: going}, ns)
		return err == nil && !ns.DeletionTimestamp.IsZero(), err
	})
	// The operator's cache sees the namespace's deletion a moment after the API server.
	time.Sleep(time.Second)
	for _, ns := range []string{going, live} {
		lws := &lwsv1.LeaderWorkerSet{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "set"}, lws); err != nil {
			t.Fatal(err)
		}
		lws.Spec.Replicas = ptr.To[int32](2)
		if err := env.Client.Update(ctx, lws); err != nil {
			t.Fatalf("scale the LeaderWorkerSet in %s: %v", ns, err)
		}
	}
	replicas := func(ns string) (int32, error) {
		sts := &appsv1.StatefulSet{}
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "set"}, sts)
		return ptr.Deref(sts.Spec.Replicas, 0), err
	}
	took := testenv.Eventually(t, 30*time.Second, "the live namespace's leader StatefulSet scaled", func() (bool, error) {
		n, err := replicas(live)
		return n == 2, err
	})
	t.Logf("scaled in the live namespace after %s", took)
	time.Sleep(2 * time.Second)
	if n, err := replicas(going); err != nil || n != 1 {
		t.Errorf("the leader StatefulSet in the namespace being deleted has %d replicas (%v), want 1: the embedded LWS acted there", n, err)
	}
}

// webhookRequests counts the requests the embedded webhook server has answered on path (the
// controller-runtime webhook metrics of this process, where the operator runs).
func webhookRequests(t *testing.T, path string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == path {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

const (
	mutateLWSPath   = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
	validateLWSPath = "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
)

// The operator's own writes of its LeaderWorkerSets (a serving's create, its scale) are not sent
// to the embedded LWS webhooks: the operator admits them itself with the webhooks' code. A
// LeaderWorkerSet written by anyone else still is, labelled as ours or not, and is defaulted.
// A serving whose LeaderWorkerSet LWS's validation refuses gets the refusal as its spec error, and
// no LeaderWorkerSet is stored.
func TestTheOperatorsOwnLeaderWorkerSetWritesSkipTheEmbeddedWebhooks(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	testenv.Eventually(t, 30*time.Second, "the LWS webhooks to skip the operator's own writes", func() (bool, error) {
		m := &admissionv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: operator.DefaultWebhookOptions().ConfigName}, m); err != nil {
			return false, err
		}
		for _, w := range m.Webhooks {
			if w.Name == "mleaderworkerset.kubectl-llm.dev" {
				return len(w.MatchConditions) == 1, nil
			}
		}
		return false, nil
	})
	// The webhook server answers before anything below is counted.
	testenv.Eventually(t, 30*time.Second, "the LWS webhook to answer", func() (bool, error) {
		err := env.Client.Create(ctx, bareLWS(ns, "warm"))
		return err == nil, err
	})
	mutated, validated := webhookRequests(t, mutateLWSPath), webhookRequests(t, validateLWSPath)

	ms := &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns},
		Spec:       v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](2), GroupSize: 2},
	}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	lwsReplicas := func(n int32) func() (bool, error) {
		return func() (bool, error) {
			lws := &lwsv1.LeaderWorkerSet{}
			err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "own"}, lws)
			return err == nil && ptr.Deref(lws.Spec.Replicas, 0) == n, err
		}
	}
	testenv.Eventually(t, 30*time.Second, "the serving's LeaderWorkerSet", lwsReplicas(2))
	if err := env.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the LeaderWorkerSet scaled to 3", lwsReplicas(3))
	if m, v := webhookRequests(t, mutateLWSPath)-mutated, webhookRequests(t, validateLWSPath)-validated; m != 0 || v != 0 {
		t.Errorf("the operator's create and scale of its LeaderWorkerSet made %v mutating and %v validating webhook requests; want 0", m, v)
	}

	// Someone else's LeaderWorkerSet, labelled as ours, goes through both webhooks and is defaulted.
	other := rest.CopyConfig(env.Config)
	other.Impersonate = rest.ImpersonationConfig{UserName: "jane", Groups: []string{"system:masters"}}
	jane, err := client.New(other, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	hand := bareLWS(ns, "hand-made")
	hand.Labels = map[string]string{v1.LabelManagedBy: v1.ManagedByValue}
	if err := jane.Create(ctx, hand); err != nil {
		t.Fatal(err)
	}
	if m, v := webhookRequests(t, mutateLWSPath)-mutated, webhookRequests(t, validateLWSPath)-validated; m != 1 || v != 1 {
		t.Errorf("another user's LeaderWorkerSet made %v mutating and %v validating webhook requests; want 1 and 1", m, v)
	}
	if hand.Spec.RolloutStrategy.RollingUpdateConfiguration == nil || hand.Spec.NetworkConfig == nil {
		t.Errorf("another user's LeaderWorkerSet was not defaulted: %+v", hand.Spec)
	}

	// maxUnavailable 1% of 1 group is 0, with maxSurge 0: LWS refuses it, and so does the operator.
	stuck := &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns},
		Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](1), GroupSize: 2,
			Rollout: v1.RolloutSpec{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("1%"))}},
	}
	if err := env.Client.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	var msg string
	testenv.Eventually(t, 30*time.Second, "the serving's spec error", func() (bool, error) {
		got := &v1.ModelServing{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stuck"}, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDegraded)
		if c == nil || c.Reason != v1.ReasonInvalidSpec {
			return false, nil
		}
		msg = c.Message
		return true, nil
	})
	if !strings.Contains(msg, "maxUnavailable") || !strings.Contains(msg, "spec.rollout") {
		t.Errorf("the spec error says %q; want it to name maxUnavailable and spec.rollout", msg)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stuck"}, &lwsv1.LeaderWorkerSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused LeaderWorkerSet: got %v, want it never stored", err)
	}
}
