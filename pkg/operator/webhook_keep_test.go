package operator

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// Two operators without leader election: the one whose configurations call another live operator
// (its certificate verifies with their CA bundle) leaves them alone; a configuration calling a
// port where nothing answers, or a server whose certificate does not verify, is taken back.
func TestWebhookConfigurationsServedElsewhereAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	caPEM, certPEM, keyPEM, err := SelfSignedCerts([]string{"localhost", "127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	other := httptest.NewUnstartedServer(http.NotFoundHandler())
	other.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	other.StartTLS()
	defer other.Close()
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	port, _ := strconv.Atoi(otherPort)
	// The configurations as the other operator applied them.
	cs := fake.NewClientset()
	theirs := DefaultWebhookOptions()
	theirs.URLHost, theirs.Port = "127.0.0.1", port
	if err := ApplyWebhookConfigurations(ctx, cs, theirs, caPEM); err != nil {
		t.Fatal(err)
	}
	ours := theirs
	ours.Port = port + 1
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
