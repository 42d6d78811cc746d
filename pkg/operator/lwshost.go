package operator

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	admissionac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwscontrollers "sigs.k8s.io/lws/pkg/controllers"
	lwswebhooks "sigs.k8s.io/lws/pkg/webhooks"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
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
	// CertDir holds tls.crt, tls.key and ca.crt. Without CertSecret: when they are missing,
	// expired or for other names, a self-signed CA and serving certificate are generated into it
	// (a temporary directory when empty): one operator outside the cluster.
	CertDir string
	// CertSecret, when set, names a Secret in ServiceNamespace that holds the installation's one
	// CA and serving certificate: every replica serves the same certificate, which the cert
	// rotator (github.com/open-policy-agent/cert-controller, as upstream LWS uses) makes,
	// rotates before expiry, writes into CertDir and injects as the webhook configurations' CA
	// bundle. The embedded install ships the Secret empty.
	CertSecret string
	// ConfigName names the webhook configurations.
	ConfigName string
	// OperatorUser is the user the operator's requests are authenticated as. The LeaderWorkerSet
	// webhooks are not called for its writes of the LeaderWorkerSets it manages, which it admits
	// itself with the webhooks' code (see admitLWS). Empty: KeepWebhookConfigurations asks the
	// API server (whoAmI); if that fails, every write goes through the webhooks.
	OperatorUser string
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
	cs, err := NewKube(cfg)
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
	dir       string
	temporary bool   // dir was made here, in the temp directory: removed when the operator stops
	caPEM     []byte // the CA bundle to register; nil when the cert rotator injects it
	// ready is closed once the serving certificate is in dir (the rotator's first pass);
	// closed from the start for self-signed certificates.
	ready chan struct{}
}

// certLookahead: a self-signed certificate that expires sooner than this is made anew.
const certLookahead = 30 * 24 * time.Hour

// prepareWebhookCerts makes the certificate directory ready: for the cert rotator (CertSecret),
// an empty directory it fills; otherwise the certificates in CertDir when they are still good
// for the webhook's names, or a new self-signed set.
func prepareWebhookCerts(o WebhookOptions, now time.Time) (*webhookCerts, error) {
	dir, temporary := o.CertDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "kubectl-llm-webhook-")
		if err != nil {
			return nil, err
		}
		dir, temporary = d, true
	}
	if o.CertSecret != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("webhook certificate directory: %w", err)
		}
		return &webhookCerts{dir: dir, temporary: temporary, ready: make(chan struct{})}, nil
	}
	ready := make(chan struct{})
	close(ready)
	hosts := webhookHosts(o)
	ca, errCA := os.ReadFile(filepath.Join(dir, "ca.crt"))
	crt, errCrt := os.ReadFile(filepath.Join(dir, "tls.crt"))
	_, errKey := os.Stat(filepath.Join(dir, "tls.key"))
	if errCA == nil && errCrt == nil && errKey == nil {
		err := CertificateUsable(ca, crt, hosts, now, certLookahead)
		if err == nil {
			return &webhookCerts{dir: dir, caPEM: ca, ready: ready}, nil
		}
		ctrl.Log.WithName("lws-webhooks").Info("Making new webhook certificates", "dir", dir, "reason", err.Error())
	}
	caPEM, certPEM, keyPEM, err := SelfSignedCerts(hosts, now)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"ca.crt": caPEM, "tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write webhook certificate: %w", err)
		}
	}
	return &webhookCerts{dir: dir, temporary: temporary, caPEM: caPEM, ready: ready}, nil
}

// webhookHosts are the names the API server may call the webhooks at.
func webhookHosts(o WebhookOptions) []string {
	hosts := []string{"localhost", "127.0.0.1"}
	if o.URLHost != "" && o.URLHost != "127.0.0.1" && o.URLHost != "localhost" {
		hosts = append(hosts, o.URLHost)
	}
	if o.ServiceName != "" {
		svc := o.ServiceName + "." + o.ServiceNamespace + ".svc"
		hosts = append(hosts, svc, svc+".cluster.local")
	}
	return hosts
}

// CertificateUsable says why a serving certificate cannot be reused (nil when it can): it must
// chain to the CA, name every host, and stay valid for lookahead after now.
func CertificateUsable(caPEM, certPEM []byte, hosts []string, now time.Time, lookahead time.Duration) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return fmt.Errorf("tls.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("tls.crt: %w", err)
	}
	if now.Add(lookahead).After(cert.NotAfter) {
		return fmt.Errorf("the serving certificate expires at %s, within %s", cert.NotAfter.UTC().Format(time.RFC3339), lookahead)
	}
	for _, h := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("the serving certificate does not verify for %s: %w", h, err)
		}
	}
	return nil
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
// rotatorName names the cert rotator's controller; several managers in one process (tests) get
// one each.
// fence is nil without leader election; with it, only the leader keeps the webhook
// configurations, and asks fence before each write (see KeepWebhookConfigurations). fp stops the
// process at the LWS controllers' writes (see lwsClient); inert when zero.
func setupEmbeddedLWS(mgr manager.Manager, o WebhookOptions, certs *webhookCerts, rotatorName string, fence func() error, fp failpoint.Set) error {
	if err := lwscontrollers.SetupIndexes(mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("LWS indexes: %w", err)
	}
	rec := mgr.GetEventRecorder("leaderworkerset")
	c, applies := lwsClient(mgr.GetClient(), mgr.GetClient(), mgr.GetAPIReader(), fp)
	// Registering the handler makes the StatefulSets' informer, as the LWS controllers' watches
	// do; before the manager starts, nothing waits.
	sts, err := mgr.GetCache().GetInformer(context.Background(), &appsv1.StatefulSet{})
	if err != nil {
		return fmt.Errorf("StatefulSet informer: %w", err)
	}
	if _, err := sts.AddEventHandler(applies.forgetDeleted()); err != nil {
		return fmt.Errorf("StatefulSet informer: %w", err)
	}
	if err := setupLWSControllers(mgr, lwscontrollers.NewLeaderWorkerSetReconciler(c, mgr.GetScheme(), rec),
		lwscontrollers.NewPodReconciler(c, mgr.GetScheme(), rec, nil)); err != nil {
		return fmt.Errorf("LWS controllers: %w", err)
	}
	registerWebhooks := func() error {
		if err := lwswebhooks.SetupLeaderWorkerSetWebhook(mgr); err != nil {
			return fmt.Errorf("LWS webhook: %w", err)
		}
		if err := lwswebhooks.NewPodWebhook(nil).Setup(mgr); err != nil {
			return fmt.Errorf("LWS pod webhook: %w", err)
		}
		return nil
	}
	if o.CertSecret == "" {
		if err := registerWebhooks(); err != nil {
			return err
		}
	} else {
		if err := addCertRotator(mgr, o, certs, rotatorName); err != nil {
			return err
		}
		key := types.NamespacedName{Namespace: o.ServiceNamespace, Name: o.CertSecret}
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return SyncCertsFromSecret(ctx, mgr.GetAPIReader(), key, certs.dir, certSyncPeriod)
		})); err != nil {
			return err
		}
		// Every replica serves admission (the Service spreads calls over them), so this waits for
		// the certificate on every replica, not only on the leader. Registering the first webhook
		// adds the webhook server to the running manager, which starts it with the certificate.
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			select {
			case <-certs.ready:
				return registerWebhooks()
			case <-ctx.Done():
				return nil
			}
		})); err != nil {
			return err
		}
	}
	cs, err := NewKube(mgr.GetConfig())
	if err != nil {
		return err
	}
	// A Runnable that needs leader election: only the elected operator writes the configurations,
	// so a second operator started elsewhere (same Lease) never points them at itself.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return KeepWebhookConfigurations(ctx, cs, o, certs.caPEM, webhookRepairPeriod, fence)
	}))
}

// everyReplica is a Runnable that runs on every replica, elected or not.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// certSyncPeriod is how often every replica copies the certificate Secret into its CertDir.
const certSyncPeriod = 5 * time.Second

// SyncCertsFromSecret writes ca.crt, tls.crt and tls.key of the Secret key into dir, now and
// whenever they change, until ctx ends. The rotator only writes the Secret; copying it here,
// rather than mounting it as a volume, makes a new replica ready as soon as the Secret is
// filled (a Secret volume can lag by the kubelet's sync period) and keeps the CA key out of
// the pod's filesystem.
func SyncCertsFromSecret(ctx context.Context, r client.Reader, key types.NamespacedName, dir string, period time.Duration) error {
	log := ctrl.Log.WithName("lws-webhooks")
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, key, secret); err != nil && ctx.Err() == nil {
			log.Error(err, "Failed to read the webhook certificate Secret", "secret", key)
		} else if err == nil {
			if err := writeCertFiles(dir, secret.Data); err != nil {
				log.Error(err, "Failed to write the webhook certificate", "dir", dir)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// writeCertFiles writes the certificate files that differ from data, each by an atomic rename;
// nothing while the Secret is still empty.
func writeCertFiles(dir string, data map[string][]byte) error {
	names := []string{"ca.crt", "tls.key", "tls.crt"} // the certificate last: it is what the rotator waits for
	for _, n := range names {
		if len(data[n]) == 0 {
			return nil
		}
	}
	for _, n := range names {
		path := filepath.Join(dir, n)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[n]) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data[n], 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// rotatedCertNames are the serving certificate's names besides <service>.<namespace>.svc: the
// cluster-domain form, and the URL host when the API server calls the webhooks by URL.
func rotatedCertNames(o WebhookOptions) []string {
	names := []string{o.ServiceName + "." + o.ServiceNamespace + ".svc.cluster.local"}
	if o.URLHost != "" {
		names = append(names, o.URLHost)
	}
	return names
}

// addCertRotator keeps the installation's one CA and serving certificate in the Secret
// o.CertSecret: made on first start, rotated 90 days before expiry, written to certs.dir on every
// replica, and injected as the CA bundle of our two webhook configurations.
func addCertRotator(mgr manager.Manager, o WebhookOptions, certs *webhookCerts, name string) error {
	svc := o.ServiceName + "." + o.ServiceNamespace + ".svc"
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.ServiceNamespace, Name: o.CertSecret},
		CertDir:        certs.dir,
		CAName:         "kubectl-llm-webhook-ca",
		CAOrganization: "kubectl-llm",
		DNSName:        svc,
		ExtraDNSNames:  rotatedCertNames(o),
		IsReady:        certs.ready,
		Webhooks: []rotator.WebhookInfo{
			{Type: rotator.Mutating, Name: o.ConfigName},
			{Type: rotator.Validating, Name: o.ConfigName},
		},
		FieldOwner:           "kubectl-llm-cert-rotator",
		EnableReadinessCheck: true,
		ControllerName:       name,
	})
	if err != nil {
		return fmt.Errorf("webhook certificate rotator: %w", err)
	}
	return nil
}

// webhookRepairPeriod is how often an operator that left the webhook configurations to another
// live operator (without leader election; see KeepWebhookConfigurations) looks whether that one
// is still there.
const webhookRepairPeriod = 10 * time.Second

// webhookReapplyInterval is the least time between two applies the watch brings: someone else
// writing the configurations over and over (a GitOps tool applying other webhooks, say) is
// answered at most once a second, not in a hot loop.
const webhookReapplyInterval = time.Second

// KeepWebhookConfigurations applies the webhook configurations, then again whenever a watch of
// the two shows them changed by someone else (a hand edit, a deletion, another operator's apply)
// until ctx ends: a converged operator sends nothing (until session 22 it re-applied them every
// 10 s, 2 GETs and 2 applies that changed nothing). The first apply failing is fatal (admission
// cannot work); later failures are logged and retried with the next change, or after period.
//
// Without leader election (fence nil), configurations that call another live operator (another
// URL, whose server holds a certificate their CA bundle verifies) are left to it: two operators
// run without leader election, say one left running on a laptop, would otherwise point them back
// and forth at each other. While they are left to it, it looks every period whether that operator
// is still there, and once it is gone points them here (its leaving changes nothing a watch
// sees). With leader election the Lease decides: the leader takes them over at once, also from the
// replica that led before and still answers while it hands them over; and fence, asked before
// each write, keeps a leader that lost its Lease without knowing it (frozen, then resumed) from
// taking them back.
func KeepWebhookConfigurations(ctx context.Context, cs Kube, o WebhookOptions, caPEM []byte, period time.Duration, fence func() error) error {
	log := ctrl.Log.WithName("lws-webhooks")
	if o.OperatorUser == "" {
		user, err := whoAmI(ctx, cs)
		if err != nil {
			log.Error(err, "The LeaderWorkerSet webhooks will be called for the operator's own LeaderWorkerSets too")
		}
		o.OperatorUser = user
	}
	echoes := &webhookEchoes{}
	apply := func() error {
		m, v, err := applyWebhookConfigurations(ctx, cs, o, caPEM)
		echoes.wrote(m, v)
		return err
	}
	leftTo := ""
	keep := func() error {
		if fence != nil {
			if err := fence(); err != nil {
				return err
			}
			return apply()
		}
		if other := servedElsewhere(ctx, cs, o); other != "" {
			if other != leftTo {
				log.Info("Another operator serves the LWS webhooks: leaving the webhook configurations to it "+
					"(run one operator, or every one with --leader-elect=true)", "url", other)
			}
			leftTo = other
			return nil
		}
		if leftTo != "" {
			log.Info("The operator the LWS webhooks called is gone: pointing them here", "was", leftTo)
			leftTo = ""
		}
		return apply()
	}
	if err := keep(); err != nil {
		return err
	}
	changed, stop, err := watchWebhookConfigurations(ctx, cs, o.ConfigName, echoes)
	if err != nil {
		return err
	}
	defer stop()
	var failed error
	last := time.Now()
	for {
		// A timer only while someone else serves them, or the last apply failed.
		var recheck <-chan time.Time
		if leftTo != "" || failed != nil {
			recheck = time.After(period)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-recheck:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(last.Add(webhookReapplyInterval))):
		}
		last = time.Now()
		if failed = keep(); failed != nil && ctx.Err() == nil {
			log.Error(failed, "Failed to repair the LWS webhook configurations")
		}
	}
}

// webhookEchoes are the resourceVersions our last applies of the two configurations returned: the
// watch's event of an object at one of them is the echo of our own write, not a change to undo
// (an apply that changes nothing returns the version it found, and makes no event).
type webhookEchoes struct {
	mu                   sync.Mutex
	mutating, validating string
}

func (e *webhookEchoes) wrote(mutating, validating string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mutating, e.validating = mutating, validating
}

func (e *webhookEchoes) echo(obj any) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch o := obj.(type) {
	case *admissionv1.MutatingWebhookConfiguration:
		return o.ResourceVersion != "" && o.ResourceVersion == e.mutating
	case *admissionv1.ValidatingWebhookConfiguration:
		return o.ResourceVersion != "" && o.ResourceVersion == e.validating
	}
	return false
}

// watchWebhookConfigurations watches our two webhook configurations (by name) and signals changed
// on each of their events but our own writes' echoes, coalesced (a buffer of one). stop ends the
// watches.
func watchWebhookConfigurations(ctx context.Context, cs Kube, name string, echoes *webhookEchoes) (changed <-chan struct{}, stop func(), err error) {
	ch := make(chan struct{}, 1)
	signal := func(obj any) {
		if echoes.echo(obj) {
			return
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    signal,
		UpdateFunc: func(_, obj any) { signal(obj) },
		DeleteFunc: func(any) { signal(nil) },
	}
	// Two informers of their own rather than client-go's informer factory: the factory links an
	// informer, lister and typed client of every built-in API into the binary (see Kube).
	mutating := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	validating := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	informers := []toolscache.SharedIndexInformer{
		informerOfOne(cs, name, &admissionv1.MutatingWebhookConfiguration{}, mutating.List, mutating.Watch),
		informerOfOne(cs, name, &admissionv1.ValidatingWebhookConfiguration{}, validating.List, validating.Watch),
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, nil, fmt.Errorf("watch the webhook configurations: %w", err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, inf := range informers {
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(wctx) }()
	}
	return ch, func() { cancel(); wg.Wait() }, nil
}

// informerOfOne is an informer of the one cluster-scoped object of this name, listed and watched
// with a typed client's List and Watch; cs says whether that client streams a watch's initial
// list (a fake does not), as client-go's generated informers pass it.
func informerOfOne[L runtime.Object](cs any, name string, example runtime.Object,
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) toolscache.SharedIndexInformer {
	byName := func(o metav1.ListOptions) metav1.ListOptions {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return o
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, byName(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, byName(o))
		},
	}
	return toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, cs), example, 0, toolscache.Indexers{})
}

// servedElsewhere is the address every webhook of our two configurations calls when it is not
// this operator's and a server there answers with a certificate the configured CA bundle
// verifies: another operator that serves them. Otherwise (ours, a Service reference, edited or
// unreachable, the configurations missing) it is "", and they are applied as this operator
// serves them.
func servedElsewhere(ctx context.Context, cs Kube, o WebhookOptions) string {
	if o.URLHost == "" {
		return ""
	}
	hooks, err := webhookClientConfigs(ctx, cs, o.ConfigName)
	if err != nil {
		return ""
	}
	ours := net.JoinHostPort(o.URLHost, strconv.Itoa(o.Port))
	host := ""
	for _, cc := range hooks {
		if cc.URL == nil {
			return ""
		}
		u, err := url.Parse(*cc.URL)
		if err != nil || u.Scheme != "https" || u.Host == ours || (host != "" && u.Host != host) || !bytes.Equal(cc.CABundle, hooks[0].CABundle) {
			return ""
		}
		host = u.Host
	}
	if host == "" {
		return ""
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(hooks[0].CABundle) {
		return ""
	}
	h, _, _ := net.SplitHostPort(host)
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second},
		Config: &tls.Config{RootCAs: roots, ServerName: h, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return ""
	}
	_ = conn.Close()
	return "https://" + host
}

// webhookClientConfigs are the client configurations of every webhook of our two configurations.
func webhookClientConfigs(ctx context.Context, cs Kube, name string) ([]admissionv1.WebhookClientConfig, error) {
	var hooks []admissionv1.WebhookClientConfig
	m, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, w := range m.Webhooks {
		hooks = append(hooks, w.ClientConfig)
	}
	v, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, w := range v.Webhooks {
		hooks = append(hooks, w.ClientConfig)
	}
	return hooks, nil
}

// WebhookFieldManager owns the webhooks and CA bundle of the webhook configurations. It differs
// from the install's field manager, so a second `kubectl llm install` (which applies the
// configurations empty) does not take the webhooks away.
const WebhookFieldManager = "kubectl-llm-operator"

// ApplyWebhookConfigurations server-side applies the mutating and validating webhook
// configurations of the embedded LWS webhooks.
func ApplyWebhookConfigurations(ctx context.Context, cs Kube, o WebhookOptions, caPEM []byte) error {
	_, _, err := applyWebhookConfigurations(ctx, cs, o, caPEM)
	return err
}

// applyWebhookConfigurations is ApplyWebhookConfigurations, returning the resourceVersions the
// applies returned ("" for one not applied).
func applyWebhookConfigurations(ctx context.Context, cs Kube, o WebhookOptions, caPEM []byte) (mutatingRV, validatingRV string, err error) {
	opts := metav1.ApplyOptions{FieldManager: WebhookFieldManager, Force: true}
	m, val := WebhookConfigurations(o, caPEM)
	got, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Apply(ctx, m, opts)
	if err != nil {
		return "", "", webhookApplyError("MutatingWebhookConfiguration", o.ConfigName, err)
	}
	gotV, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Apply(ctx, val, opts)
	if err != nil {
		return got.ResourceVersion, "", webhookApplyError("ValidatingWebhookConfiguration", o.ConfigName, err)
	}
	return got.ResourceVersion, gotV.ResourceVersion, nil
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
// With o.OperatorUser, the LeaderWorkerSet webhooks skip that user's writes of LeaderWorkerSets
// labelled as ours (ownLWSWritesCondition), which the operator admits itself (admitLWS).
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
	var lwsConditions []*admissionac.MatchConditionApplyConfiguration
	if o.OperatorUser != "" {
		lwsConditions = append(lwsConditions, ownLWSWritesCondition(o.OperatorUser))
	}
	mutating := admissionac.MutatingWebhookConfiguration(o.ConfigName).WithLabels(labels).WithWebhooks(
		admissionac.MutatingWebhook().WithName("mleaderworkerset.kubectl-llm.dev").WithClientConfig(client(pathMutateLWS)).
			WithRules(lwsRule).WithMatchConditions(lwsConditions...).
			WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
		admissionac.MutatingWebhook().WithName("mpod.kubectl-llm.dev").WithClientConfig(client(pathMutatePod)).
			WithRules(podRule(admissionv1.Create)).WithObjectSelector(lwsPods).
			WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
	)
	validating := admissionac.ValidatingWebhookConfiguration(o.ConfigName).WithLabels(labels).WithWebhooks(
		admissionac.ValidatingWebhook().WithName("vleaderworkerset.kubectl-llm.dev").WithClientConfig(client(pathValidateLWS)).
			WithRules(lwsRule).WithMatchConditions(lwsConditions...).WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
		admissionac.ValidatingWebhook().WithName("vpod.kubectl-llm.dev").WithClientConfig(client(pathValidatePod)).
			WithRules(podRule(admissionv1.Create, admissionv1.Update)).WithObjectSelector(lwsPods).
			WithFailurePolicy(fail).WithSideEffects(none).WithAdmissionReviewVersions("v1"),
	)
	return mutating, validating
}
