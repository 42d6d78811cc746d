package operator

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwscontrollers "sigs.k8s.io/lws/pkg/controllers"
	lwswebhooks "sigs.k8s.io/lws/pkg/webhooks"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// The permissions of the embedded LWS are declared in package lwsrbac (a role of its own, bound
// only by the embedded install); the manager's own are in modelserving_controller.go.

// WebhookOptions say where the embedded LWS webhooks listen and how the API server reaches them.
type WebhookOptions struct {
	// BindHost and Port are where the webhook server listens.
	BindHost string
	Port     int
	// URLHost, when set, makes the webhook configurations call https://URLHost:Port/… (an operator
	// outside the cluster, e.g. 127.0.0.1). When empty they call the Service below.
	URLHost          string
	ServiceName      string
	ServiceNamespace string
	// CertDir holds tls.crt, tls.key and ca.crt (e.g. a mounted Secret). When they are missing,
	// a self-signed CA and serving certificate are generated into it (a temporary directory when empty).
	CertDir string
	// ConfigName names the webhook configurations.
	ConfigName string
}

// InstallNamespace is the namespace `kubectl llm install` puts the operator in.
const InstallNamespace = "kubectl-llm-system"

// DefaultWebhookOptions are the defaults of `kubectl llm operator`.
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{Port: 9443, ServiceName: "kubectl-llm-webhook", ServiceNamespace: InstallNamespace, ConfigName: "kubectl-llm-lws"}
}

// Webhook paths the upstream LWS webhooks register.
const (
	pathMutateLWS   = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
	pathValidateLWS = "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
	pathMutatePod   = "/mutate--v1-pod"
	pathValidatePod = "/validate--v1-pod"
)

// resolveLWSMode turns auto into external or embedded: embedded when no webhook configuration
// in the cluster serves LeaderWorkerSets (LWS does not work without its webhooks).
func resolveLWSMode(ctx context.Context, cfg *rest.Config, mode string) (string, error) {
	switch mode {
	case LWSExternal, LWSEmbedded:
		return mode, nil
	case LWSAuto, "":
	default:
		return "", fmt.Errorf("--lws must be external, embedded or auto, not %q", mode)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	hooks, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		// The shipped role may not list webhook configurations; the install passes --lws explicitly.
		return "", fmt.Errorf("--lws=auto needs to list mutating webhook configurations, which is forbidden here: "+
			"pass --lws=external (LWS is installed) or --lws=embedded (%w)", err)
	}
	if err != nil {
		return "", fmt.Errorf("look for an LWS controller (mutating webhook configurations): %w", err)
	}
	if ExternalLWSWebhook(hooks.Items, DefaultWebhookOptions().ConfigName) != "" {
		return LWSExternal, nil
	}
	return LWSEmbedded, nil
}

// ExternalLWSWebhook names a mutating webhook configuration, other than ours, that serves
// LeaderWorkerSets: the sign of an installed LWS controller. Empty when there is none.
func ExternalLWSWebhook(configs []admissionv1.MutatingWebhookConfiguration, ours string) string {
	for _, c := range configs {
		if c.Name == ours {
			continue
		}
		for _, w := range c.Webhooks {
			for _, rule := range w.Rules {
				if contains(rule.APIGroups, lwsv1.GroupVersion.Group) && contains(rule.Resources, "leaderworkersets") {
					return c.Name
				}
			}
		}
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x || s == "*" {
			return true
		}
	}
	return false
}

type webhookCerts struct {
	dir    string
	caPEM  []byte
	opts   WebhookOptions
	config *rest.Config
}

// prepareWebhookCerts uses the certificates in CertDir, or generates a self-signed set there.
func prepareWebhookCerts(o WebhookOptions) (*webhookCerts, error) {
	dir := o.CertDir
	if dir == "" {
		d, err := os.MkdirTemp("", "kubectl-llm-webhook-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	ca, errCA := os.ReadFile(filepath.Join(dir, "ca.crt"))
	_, errCrt := os.Stat(filepath.Join(dir, "tls.crt"))
	_, errKey := os.Stat(filepath.Join(dir, "tls.key"))
	if errCA == nil && errCrt == nil && errKey == nil {
		return &webhookCerts{dir: dir, caPEM: ca, opts: o}, nil
	}
	hosts := []string{"localhost", "127.0.0.1"}
	if o.URLHost != "" {
		hosts = append(hosts, o.URLHost)
	}
	if o.ServiceName != "" {
		svc := o.ServiceName + "." + o.ServiceNamespace + ".svc"
		hosts = append(hosts, svc, svc+".cluster.local")
	}
	caPEM, certPEM, keyPEM, err := SelfSignedCerts(hosts, time.Now())
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"ca.crt": caPEM, "tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write webhook certificate: %w", err)
		}
	}
	return &webhookCerts{dir: dir, caPEM: caPEM, opts: o}, nil
}

// SelfSignedCerts makes a CA and a serving certificate for the given hosts, valid for a year.
func SelfSignedCerts(hosts []string, now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubectl-llm-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	enc := func(typ string, b []byte) []byte {
		var buf bytes.Buffer
		_ = pem.Encode(&buf, &pem.Block{Type: typ, Bytes: b})
		return buf.Bytes()
	}
	return enc("CERTIFICATE", caDER), enc("CERTIFICATE", der), enc("EC PRIVATE KEY", keyDER), nil
}

// setupEmbeddedLWS hosts the upstream LWS reconcilers and webhooks in our manager, and keeps
// the webhook configurations that send LWS and pod admission to them.
func setupEmbeddedLWS(mgr manager.Manager, o WebhookOptions, certs *webhookCerts) error {
	if err := lwscontrollers.SetupIndexes(mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("LWS indexes: %w", err)
	}
	rec := mgr.GetEventRecorder("leaderworkerset")
	if err := lwscontrollers.NewLeaderWorkerSetReconciler(mgr.GetClient(), mgr.GetScheme(), rec).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("LWS controller: %w", err)
	}
	if err := lwscontrollers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), rec, nil).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("LWS pod controller: %w", err)
	}
	if err := lwswebhooks.SetupLeaderWorkerSetWebhook(mgr); err != nil {
		return fmt.Errorf("LWS webhook: %w", err)
	}
	if err := lwswebhooks.NewPodWebhook(nil).Setup(mgr); err != nil {
		return fmt.Errorf("LWS pod webhook: %w", err)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	// A Runnable that needs leader election: only the elected operator writes the configurations,
	// so a second operator started elsewhere (same Lease) never points them at itself.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return KeepWebhookConfigurations(ctx, cs, o, certs.caPEM, webhookRepairPeriod)
	}))
}

// webhookRepairPeriod is how often the webhook configurations are re-applied, undoing hand edits
// (an unchanged apply writes nothing).
const webhookRepairPeriod = 10 * time.Second

// KeepWebhookConfigurations applies the webhook configurations, then re-applies them every period
// until ctx ends. The first apply failing is fatal (admission cannot work); later failures are
// logged and retried.
func KeepWebhookConfigurations(ctx context.Context, cs kubernetes.Interface, o WebhookOptions, caPEM []byte, period time.Duration) error {
	if err := ApplyWebhookConfigurations(ctx, cs, o, caPEM); err != nil {
		return err
	}
	log := ctrl.Log.WithName("lws-webhooks")
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := ApplyWebhookConfigurations(ctx, cs, o, caPEM); err != nil && ctx.Err() == nil {
				log.Error(err, "Failed to repair the LWS webhook configurations")
			}
		}
	}
}

// WebhookFieldManager owns the webhooks and CA bundle of the webhook configurations. It differs
// from the install's field manager, so a second `kubectl llm install` (which applies the
// configurations empty) does not take the webhooks away.
const WebhookFieldManager = "kubectl-llm-operator"

// ApplyWebhookConfigurations server-side applies the mutating and validating webhook
// configurations of the embedded LWS webhooks.
func ApplyWebhookConfigurations(ctx context.Context, cs kubernetes.Interface, o WebhookOptions, caPEM []byte) error {
	opts := metav1.ApplyOptions{FieldManager: WebhookFieldManager, Force: true}
	m, val := WebhookConfigurations(o, caPEM)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Apply(ctx, m, opts); err != nil {
		return webhookApplyError("MutatingWebhookConfiguration", o.ConfigName, err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Apply(ctx, val, opts); err != nil {
		return webhookApplyError("ValidatingWebhookConfiguration", o.ConfigName, err)
	}
	return nil
}

func webhookApplyError(kind, name string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("apply %s %s: %w (the operator's role may only fill in the configurations "+
			"that `kubectl llm install --lws=embedded` ships: run it to recreate them)", kind, name, err)
	}
	return fmt.Errorf("apply %s %s: %w", kind, name, err)
}

// WebhookConfigurations are the embedded LWS webhooks' configurations. Pod webhooks only see
// pods LWS made (objectSelector), so the rest of the cluster never depends on this operator.
func WebhookConfigurations(o WebhookOptions, caPEM []byte) (*admissionac.MutatingWebhookConfigurationApplyConfiguration, *admissionac.ValidatingWebhookConfigurationApplyConfiguration) {
	client := func(path string) *admissionac.WebhookClientConfigApplyConfiguration {
		c := admissionac.WebhookClientConfig().WithCABundle(caPEM...)
		if o.URLHost != "" {
			return c.WithURL("https://" + net.JoinHostPort(o.URLHost, strconv.Itoa(o.Port)) + path)
		}
		return c.WithService(admissionac.ServiceReference().WithNamespace(o.ServiceNamespace).WithName(o.ServiceName).
			WithPath(path).WithPort(int32(o.Port)))
	}
	lwsRule := admissionac.RuleWithOperations().WithAPIGroups(lwsv1.GroupVersion.Group).WithAPIVersions("v1").
		WithResources("leaderworkersets").WithOperations(admissionv1.Create, admissionv1.Update)
	podRule := func(ops ...admissionv1.OperationType) *admissionac.RuleWithOperationsApplyConfiguration {
		return admissionac.RuleWithOperations().WithAPIGroups("").WithAPIVersions("v1").WithResources("pods").WithOperations(ops...)
	}
	lwsPods := metav1ac.LabelSelector().WithMatchExpressions(metav1ac.LabelSelectorRequirement().
		WithKey(lwsv1.SetNameLabelKey).WithOperator(metav1.LabelSelectorOpExists))
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	labels := map[string]string{v1.LabelManagedBy: v1.ManagedByValue}
	mutating := admissionac.MutatingWebhookConfiguration(o.ConfigName).WithLabels(labels).WithWebhooks(
		admissionac.MutatingWebhook().WithName("mleaderworkerset.kubectl-llm.dev").WithClientConfig(client(pathMutateLWS)).
			WithRules(lwsRule).WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
		admissionac.MutatingWebhook().WithName("mpod.kubectl-llm.dev").WithClientConfig(client(pathMutatePod)).
			WithRules(podRule(admissionv1.Create)).WithObjectSelector(lwsPods).
			WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
	)
	validating := admissionac.ValidatingWebhookConfiguration(o.ConfigName).WithLabels(labels).WithWebhooks(
		admissionac.ValidatingWebhook().WithName("vleaderworkerset.kubectl-llm.dev").WithClientConfig(client(pathValidateLWS)).
			WithRules(lwsRule).WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
		admissionac.ValidatingWebhook().WithName("vpod.kubectl-llm.dev").WithClientConfig(client(pathValidatePod)).
			WithRules(podRule(admissionv1.Create, admissionv1.Update)).WithObjectSelector(lwsPods).
			WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
	)
	return mutating, validating
}
