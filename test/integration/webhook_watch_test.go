package integration

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// applies is how many APPLY requests for the webhook configurations the API server has counted
// (apiserver_request_total), every client's.
func applies(t *testing.T, cs *kubernetes.Clientset) int {
	t.Helper()
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="APPLY"`) ||
			!strings.Contains(line, "webhookconfigurations") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// The operator watches its webhook configurations rather than applying them again every 10 s: a
// converged operator sends no apply for longer than that period, and a hand edit is undone at
// once (within the watch's delivery and the operator's one-second spacing of applies).
func TestTheWebhookConfigurationsAreWatchedNotReapplied(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Name: "kubectl-llm-lws"}
	filled := func() (bool, error) {
		m := &admissionv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, key, m); err != nil {
			return false, err
		}
		return len(m.Webhooks) == 2 && m.Webhooks[0].ClientConfig.URL != nil && strings.Contains(*m.Webhooks[0].ClientConfig.URL, "127.0.0.1"), nil
	}
	testenv.Eventually(t, 60*time.Second, "the operator to fill in its webhook configurations", filled)
	time.Sleep(2 * time.Second) // the watch's first list, and the apply it may bring, done
	before := applies(t, cs)
	time.Sleep(12 * time.Second)
	if n := applies(t, cs) - before; n != 0 {
		t.Errorf("%d applies of the webhook configurations in 12 s with nothing changed, want 0 (the old repair applied both every 10 s)", n)
	}
	m := &admissionv1.MutatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, key, m); err != nil {
		t.Fatal(err)
	}
	nowhere := "https://127.0.0.1:1/nowhere"
	m.Webhooks = m.Webhooks[:1]
	m.Webhooks[0].ClientConfig.URL = &nowhere
	if err := env.Client.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	edited := time.Now()
	took := testenv.Eventually(t, 30*time.Second, "the hand edit undone", filled)
	t.Logf("hand edit undone after %s", took.Round(10*time.Millisecond))
	if since := time.Since(edited); since > 5*time.Second {
		t.Errorf("the hand edit was undone after %s: the watch should bring it within a second or two, not a period", since.Round(time.Millisecond))
	}
}
