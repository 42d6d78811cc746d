package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
// points them elsewhere, or removes them, is undone within the repair period.
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
