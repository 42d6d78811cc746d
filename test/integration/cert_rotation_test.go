package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// replica is one operator of a two-replica installation, run in this process.
type replica struct {
	webhookPort, probePort int
	done                   <-chan struct{}
}

// Two replicas of the embedded operator share the installation's one CA and serving certificate
// through the Secret: both serve a certificate that the registered CA bundle verifies, for the
// Service name, so the API server may call either (a rolling update or a second replica does not
// break admission), and LWS admission works through them.
func TestTwoReplicasServeTheInstallationsOneCertificate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ns := namespace(t)
	configName := "rotated-" + ns
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook-certs", Namespace: ns}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// The install ships both configurations empty.
	mwc := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configName}}
	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configName}}
	for _, o := range []client.Object{mwc, vwc} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var replicas []replica
	t.Cleanup(func() {
		cancel()
		for _, r := range replicas {
			<-r.done
		}
		// Webhook configurations that point at stopped replicas would refuse every LWS.
		_ = env.Client.Delete(context.Background(), mwc)
		_ = env.Client.Delete(context.Background(), vwc)
	})
	for i := 0; i < 2; i++ {
		r, err := startReplica(ctx, t, ns, configName, secret.Name)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, r)
	}
	for i, r := range replicas {
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("replica %d ready", i), func() (bool, error) {
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(r.probePort) + "/readyz")
			if err != nil {
				return false, err
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, fmt.Errorf("readyz %d", resp.StatusCode)
		})
	}
	// The CA bundle the rotator registered is the Secret's CA.
	var bundle []byte
	testenv.Eventually(t, 30*time.Second, "the CA bundle injected", func() (bool, error) {
		if err := env.Client.Get(ctx, types.NamespacedName{Name: configName}, mwc); err != nil {
			return false, err
		}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: secret.Name}, secret); err != nil {
			return false, err
		}
		if len(mwc.Webhooks) != 2 || len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, fmt.Errorf("%d webhooks, no CA bundle yet", len(mwc.Webhooks))
		}
		bundle = mwc.Webhooks[0].ClientConfig.CABundle
		return bytes.Equal(bundle, secret.Data["ca.crt"]), fmt.Errorf("the CA bundle is not the Secret's ca.crt")
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("the CA bundle holds no certificate")
	}
	var serials []string
	for i, r := range replicas {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.webhookPort)), &tls.Config{
			RootCAs: roots, ServerName: "kubectl-llm-webhook." + ns + ".svc",
		})
		if err != nil {
			t.Fatalf("replica %d: its certificate does not verify with the registered CA bundle for the Service name: %v", i, err)
		}
		serials = append(serials, conn.ConnectionState().PeerCertificates[0].SerialNumber.String())
		_ = conn.Close()
	}
	if serials[0] != serials[1] {
		t.Errorf("the replicas serve different certificates (serials %v); want the installation's one", serials)
	}
	// Admission through them works: the embedded LWS webhooks default and admit an LWS.
	testenv.Eventually(t, 30*time.Second, "an LWS admitted", func() (bool, error) {
		err := env.Client.Create(ctx, bareLWS(ns, "through-rotated-certs"))
		return err == nil, err
	})
}

func startReplica(ctx context.Context, t *testing.T, ns, configName, secretName string) (replica, error) {
	webhookPort, err := testenv.FreePort()
	if err != nil {
		return replica{}, err
	}
	probePort, err := testenv.FreePort()
	if err != nil {
		return replica{}, err
	}
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "127.0.0.1:"+strconv.Itoa(probePort)
	opts.LWS = operator.LWSEmbedded
	opts.Namespace = ns // keep these replicas' reconcilers off the other tests' objects
	opts.LeaderElectionNamespace, opts.LeaderElectionID = ns, "rotated"
	opts.Registry = prometheus.NewRegistry()
	opts.SkipNameValidation = true
	opts.Webhook.Port = webhookPort
	opts.Webhook.BindHost, opts.Webhook.URLHost = "127.0.0.1", "localhost"
	opts.Webhook.ServiceNamespace, opts.Webhook.ConfigName = ns, configName
	opts.Webhook.CertSecret, opts.Webhook.CertDir = secretName, t.TempDir()
	mgr, err := operator.NewManager(ctx, env.Config, opts)
	if err != nil {
		return replica{}, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("replica: %v", err)
		}
	}()
	return replica{webhookPort: webhookPort, probePort: probePort, done: done}, nil
}
