package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// With exclusive topology the embedded LWS reads the leader's node: as its ServiceAccount the
// operator may (nodes get/list/watch), so each group gets one node of its own and the serving
// becomes Ready; a plain serving created next is not held up behind it.
func TestExclusiveTopologyAsTheOperatorsServiceAccount(t *testing.T) {
	ns := namespace(t)
	ms := newServing(ns, "excl", 2, 2, 1)
	ms.Spec.Scheduling.ExclusiveTopology = "kubernetes.io/hostname"
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 exclusive groups × 2 pods Ready in %s", waitReady(t, ns, "excl", settle))
	nodeOf := map[int]map[string]bool{}
	for _, p := range live(pods(t, ns, "excl")) {
		pod := &corev1.Pod{}
		if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: p.Name}, pod); err != nil {
			t.Fatal(err)
		}
		if nodeOf[p.Group] == nil {
			nodeOf[p.Group] = map[string]bool{}
		}
		nodeOf[p.Group][pod.Spec.NodeName] = true
	}
	for g, nodes := range nodeOf {
		if len(nodes) != 1 {
			t.Errorf("group %d spans nodes %v; exclusive topology puts a group on one node", g, nodes)
		}
	}
	if len(nodeOf) == 2 {
		for n := range nodeOf[0] {
			if nodeOf[1][n] {
				t.Errorf("groups 0 and 1 share node %s", n)
			}
		}
	}
	if err := kc.Create(context.Background(), newServing(ns, "plain", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if took := waitReady(t, ns, "plain", 30*time.Second); took > 20*time.Second {
		t.Errorf("a plain serving took %s to be Ready next to an exclusive one", took)
	}
}

// The elected operator keeps the webhook configurations the install ships: a hand edit that
// points them elsewhere, or removes them, is undone (at once: the operator watches them).
func TestHandEditedWebhookConfigurationsAreRepaired(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Name: "kubectl-llm-lws"}
	mwc := &admissionv1.MutatingWebhookConfiguration{}
	if err := kc.Get(ctx, key, mwc); err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 2 {
		t.Fatalf("the operator filled in %d mutating webhooks, want 2", len(mwc.Webhooks))
	}
	want := *mwc.Webhooks[0].ClientConfig.URL
	testenv.Eventually(t, 10*time.Second, "hand edit", func() (bool, error) {
		if err := kc.Get(ctx, key, mwc); err != nil {
			return false, err
		}
		bad := "https://127.0.0.1:1/nowhere"
		mwc.Webhooks[0].ClientConfig.URL = &bad
		mwc.Webhooks = mwc.Webhooks[:1]
		err := kc.Update(ctx, mwc)
		return err == nil, err
	})
	took := testenv.Eventually(t, 30*time.Second, "webhooks repaired", func() (bool, error) {
		if err := kc.Get(ctx, key, mwc); err != nil {
			return false, err
		}
		if len(mwc.Webhooks) != 2 || mwc.Webhooks[0].ClientConfig.URL == nil || *mwc.Webhooks[0].ClientConfig.URL != want {
			return false, fmt.Errorf("%d webhooks, first at %v", len(mwc.Webhooks), mwc.Webhooks[0].ClientConfig.URL)
		}
		return true, nil
	})
	t.Logf("hand-edited MutatingWebhookConfiguration repaired after %s", took)
	// Admission works again: a serving still becomes Ready.
	ns := namespace(t)
	if err := kc.Create(ctx, newServing(ns, "after", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "after", settle)
}

// On the simulated cluster (authorization on), the operator's ServiceAccount is refused what a
// shared cluster must keep from it, by the real API server.
func TestTheOperatorsServiceAccountIsRefusedOutsideItsRoles(t *testing.T) {
	ctx := context.Background()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sim.OperatorServiceAccount}
	as, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed", Namespace: "kube-system"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed", Namespace: "kube-system"}}
	foreign := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses-webhook"}}
	ours := &admissionv1.MutatingWebhookConfiguration{}
	for _, tc := range []struct {
		what string
		do   func() error
	}{
		{"create a pod in kube-system", func() error { return as.Create(ctx, pod) }},
		{"create a lease in kube-system", func() error { return as.Create(ctx, lease) }},
		{"create a webhook configuration", func() error { return as.Create(ctx, foreign) }},
		{"list Secrets", func() error { return as.List(ctx, &corev1.SecretList{}) }},
		{"delete our webhook configuration", func() error {
			ours.Name = "kubectl-llm-lws"
			return as.Delete(ctx, ours)
		}},
	} {
		if err := tc.do(); !apierrors.IsForbidden(err) {
			t.Errorf("as %s, %s: got %v, want Forbidden", sim.OperatorServiceAccount, tc.what, err)
		}
	}
	// and allowed what it needs (the positive side of the roles): its own Lease namespace.
	own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: "kubectl-llm-system"}}
	if err := as.Create(ctx, own); err != nil {
		t.Errorf("as the operator, create a Lease in kubectl-llm-system: %v", err)
	} else {
		_ = kc.Delete(ctx, own)
	}
}

// The simulated cluster's kube-apiserver runs as a production one does: RBAC, and the admission
// plugins that change what an operator may do (owner references, Pod Security, priority).
func TestTheSimulatedClusterRunsRBACAndAdmission(t *testing.T) {
	pid, err := os.ReadFile(filepath.Join(cluster.Dir, "kwok", "clusters", cluster.Name, "pids", "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(raw), "\x00")
	want := map[string]bool{"--authorization-mode=Node,RBAC": false,
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement,PodSecurity,Priority": false}
	for _, a := range args {
		if _, ok := want[a]; ok {
			want[a] = true
		}
		if strings.HasPrefix(a, "--admission-control=") || strings.HasPrefix(a, "--disable-admission-plugins=") {
			t.Errorf("kube-apiserver runs with %s", a)
		}
	}
	for a, seen := range want {
		if !seen {
			t.Errorf("kube-apiserver runs without %s: %q", a, args)
		}
	}
}
