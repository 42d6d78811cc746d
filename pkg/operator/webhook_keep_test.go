package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Two operators without leader election: the one whose configurations call another live operator
// (its certificate verifies with their CA bundle) leaves them alone; a configuration calling a
// port where nothing answers, or a server whose certificate does not verify, is taken back.
func TestWebhookConfigurationsServedElsewhereAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	other, cs, theirs, ours, caPEM := configurationsOfAnotherOperator(t)
	defer other.Close()
	otherPort := strconv.Itoa(theirs.Port)
	if got := servedElsewhere(ctx, cs, ours); got != "https://127.0.0.1:"+otherPort {
		t.Errorf("configurations calling a live operator: servedElsewhere = %q", got)
	}
	if got := servedElsewhere(ctx, cs, theirs); got != "" {
		t.Errorf("our own configurations: servedElsewhere = %q, want \"\"", got)
	}
	// Another CA bundle: the server there does not verify with it.
	otherCA, _, _, err := SelfSignedCerts([]string{"127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyWebhookConfigurations(ctx, cs, theirs, otherCA); err != nil {
		t.Fatal(err)
	}
	if got := servedElsewhere(ctx, cs, ours); got != "" {
		t.Errorf("a server that does not verify with the CA bundle: servedElsewhere = %q, want \"\"", got)
	}
	// The other operator gone.
	if err := ApplyWebhookConfigurations(ctx, cs, theirs, caPEM); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if got := servedElsewhere(ctx, cs, ours); got != "" {
		t.Errorf("nothing answering there: servedElsewhere = %q, want \"\"", got)
	}
	// In the cluster (Service references, every replica the same): always applied.
	inCluster := DefaultWebhookOptions()
	if got := servedElsewhere(ctx, cs, inCluster); got != "" {
		t.Errorf("in-cluster options: servedElsewhere = %q, want \"\"", got)
	}
}

// With leader election the leader takes the configurations over at once, even from another live
// operator they call (the replica that led before, still answering while it hands them over).
func TestElectedLeaderTakesTheWebhookConfigurationsOver(t *testing.T) {
	before, cs, theirs, ours, caPEM := configurationsOfAnotherOperator(t)
	defer before.Close()
	theirURL := "https://127.0.0.1:" + strconv.Itoa(theirs.Port) + pathMutateLWS
	stale := errors.New("not written: fenced")
	for _, tc := range []struct {
		name  string
		fence func() error
		err   error
		want  string // the URL the configurations call afterwards, when not ours
	}{
		{"without election: left to the live operator", nil, nil, theirURL},
		{"elected, but fenced (a resumed leader past its renew deadline): not written", func() error { return stale }, stale, theirURL},
		{"elected: taken over", func() error { return nil }, nil, ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := KeepWebhookConfigurations(ctx, cs, ours, caPEM, time.Hour, tc.fence)
		cancel()
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
		}
		got, _ := calledElsewhere(context.Background(), cs, ours.ConfigName, "127.0.0.1:"+strconv.Itoa(ours.Port))
		if got != tc.want {
			t.Errorf("%s: the configurations call %q, want %q", tc.name, got, tc.want)
		}
	}
}

// liveOperator is a TLS server standing in for another operator's webhooks, with a certificate
// for 127.0.0.1 from the CA returned.
func liveOperator(t *testing.T) (caPEM []byte, srv *httptest.Server) {
	t.Helper()
	caPEM, certPEM, keyPEM, err := SelfSignedCerts([]string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	return caPEM, srv
}

// configurationsOfAnotherOperator starts a live operator's webhook server (other) and applies the
// webhook configurations as it would (theirs, calling it by URL); ours are the same options with
// the next port, as a second operator beside it has them.
func configurationsOfAnotherOperator(t *testing.T) (other *httptest.Server, cs *fake.Clientset, theirs, ours WebhookOptions, caPEM []byte) {
	t.Helper()
	caPEM, other = liveOperator(t)
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	port, _ := strconv.Atoi(otherPort)
	cs = fake.NewClientset()
	theirs = DefaultWebhookOptions()
	theirs.URLHost, theirs.Port = "127.0.0.1", port
	if err := ApplyWebhookConfigurations(context.Background(), cs, theirs, caPEM); err != nil {
		other.Close()
		t.Fatal(err)
	}
	ours = theirs
	ours.Port = port + 1
	return other, cs, theirs, ours, caPEM
}

// The webhook configurations are watched, not re-applied on a timer: a hand edit is undone, and a
// deleted configuration made again, long before the period (an hour here) would. (That a converged
// operator sends nothing is measured against a real API server, in test/integration: this fake
// keeps no resourceVersions, so every apply looks like a change to its watch.)
func TestHandEditedWebhookConfigurationsAreRepairedAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caPEM, _, _, err := SelfSignedCerts([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	o := DefaultWebhookOptions()
	o.URLHost, o.Port = "127.0.0.1", 9443
	done := make(chan error, 1)
	go func() { done <- KeepWebhookConfigurations(ctx, cs, o, caPEM, time.Hour, func() error { return nil }) }()
	mutating := func() (*admissionv1.MutatingWebhookConfiguration, error) {
		return cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, o.ConfigName, metav1.GetOptions{})
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the configurations applied", func() bool {
		m, err := mutating()
		return err == nil && len(m.Webhooks) == 2
	})
	// A hand edit: one webhook left, calling nowhere.
	m, err := mutating()
	if err != nil {
		t.Fatal(err)
	}
	nowhere := "https://127.0.0.1:1/nowhere"
	m.Webhooks = m.Webhooks[:1]
	m.Webhooks[0].ClientConfig.URL = &nowhere
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the hand edit undone", func() bool {
		m, err := mutating()
		return err == nil && len(m.Webhooks) == 2 && m.Webhooks[0].ClientConfig.URL != nil && *m.Webhooks[0].ClientConfig.URL != nowhere
	})
	// Deleted: made again.
	if err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, o.ConfigName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the deleted configuration made again", func() bool {
		_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, o.ConfigName, metav1.GetOptions{})
		return err == nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("KeepWebhookConfigurations: %v", err)
	}
}
