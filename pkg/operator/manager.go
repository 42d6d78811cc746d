package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// LWS hosting modes.
const (
	LWSExternal = "external" // LWS is installed in the cluster
	LWSEmbedded = "embedded" // this manager hosts the upstream LWS reconcilers and webhooks
	LWSAuto     = "auto"     // embedded when no LWS controller is present
)

// Options configure the operator's manager. The cobra command binds its flags to these fields.
type Options struct {
	MetricsAddr             string
	ProbeAddr               string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// Namespace, when set, restricts the operator to one namespace.
	Namespace    string
	HistoryLimit int
	// LWS is external, embedded or auto.
	LWS     string
	Webhook WebhookOptions
	// Metrics registry; controller-runtime's global registry when nil.
	Registry crmetrics.RegistererGatherer
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
}

// DefaultOptions are the defaults of `kubectl llm operator`.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:      ":8080",
		ProbeAddr:        ":8081",
		LeaderElect:      true,
		LeaderElectionID: "kubectl-llm-operator",
		HistoryLimit:     DefaultHistoryLimit,
		LWS:              LWSAuto,
		Webhook:          DefaultWebhookOptions(),
	}
}

// servingPods selects the pods the cache holds: only those of servings, never every pod.
func servingPods() labels.Selector {
	req, err := labels.NewRequirement(v1.LabelName, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// NewManager builds the manager with the ModelServing reconciler and, when asked or needed,
// the embedded LWS reconcilers and webhooks.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := WaitForAPIs(ctx, cfg, 10*time.Second); err != nil {
		return nil, err
	}
	mode, err := resolveLWSMode(ctx, cfg, opts.LWS)
	if err != nil {
		return nil, err
	}
	ctrl.Log.WithName("setup").Info("LeaderWorkerSet hosting", "mode", mode)

	cacheOpts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: servingPods()},
		// Only the events that say a LeaderWorkerSet or StatefulSet cannot create what it must.
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("reason", status.EventFailedCreate)},
	}}
	if mode == LWSEmbedded {
		// LWS needs every pod it made, which all carry its set-name label; ours carry both.
		req, _ := labels.NewRequirement(lwsv1.SetNameLabelKey, selection.Exists, nil)
		cacheOpts.ByObject[&corev1.Pod{}] = cache.ByObject{Label: labels.NewSelector().Add(*req)}
	}
	if opts.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	mopts := ctrl.Options{
		Scheme:                        scheme.New(),
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrTo(15 * time.Second),
	}
	// The default for controllers that set none: the embedded LWS reconcilers, whose single
	// upstream worker otherwise makes StatefulSets one serving at a time (the scale harness saw
	// 14 s of queueing at 100 servings).
	mopts.Controller.MaxConcurrentReconciles = 4
	if opts.SkipNameValidation {
		mopts.Controller.SkipNameValidation = ptrTo(true)
	}
	var certs *webhookCerts
	if mode == LWSEmbedded {
		certs, err = prepareWebhookCerts(opts.Webhook, time.Now())
		if err != nil {
			return nil, err
		}
		mopts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: opts.Webhook.BindHost, Port: opts.Webhook.Port, CertDir: certs.dir,
			TLSOpts: []func(*tls.Config){webhookTLS},
		})
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	reg := opts.Registry
	if reg == nil {
		reg = crmetrics.Registry
	}
	metrics, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	r := &Reconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("kubectl-llm"),
		Clock: clock.RealClock{}, HistoryLimit: opts.HistoryLimit, Metrics: metrics,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up the ModelServing controller: %w", err)
	}
	if mode == LWSEmbedded {
		rotatorName := opts.Webhook.ConfigName + "-cert-rotator"
		if opts.SkipNameValidation {
			rotatorName += "-" + strconv.FormatInt(managerSeq.Add(1), 10)
		}
		if err := setupEmbeddedLWS(mgr, opts.Webhook, certs, rotatorName); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	ready := healthz.Ping
	if mode == LWSEmbedded {
		ready = func(req *http.Request) error {
			select {
			case <-certs.ready:
			default:
				// Asking the webhook server now would start it before its certificate exists.
				return errors.New("waiting for the webhook certificate")
			}
			return mgr.GetWebhookServer().StartedChecker()(req)
		}
	}
	if err := mgr.AddReadyzCheck("ready", ready); err != nil {
		return nil, err
	}
	return mgr, nil
}

// managerSeq numbers the managers of one process (tests), whose controllers need distinct names.
var managerSeq atomic.Int64

// webhookTLS hardens the webhook server: TLS 1.2 or newer (Go's default for servers too, made
// explicit), and HTTP/1.1 only (HTTP/2 off, as Kubernetes components do since the HTTP/2
// rapid-reset and stream-exhaustion attacks; the API server calls webhooks over HTTP/1.1).
func webhookTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.NextProtos = []string{"http/1.1"}
}

// WaitForAPIs waits (up to timeout, for CRDs applied a moment ago) until the API server serves
// ModelServing and LeaderWorkerSet, and otherwise says what to install. Without it the
// controllers would start only once a background retry finds the CRDs.
func WaitForAPIs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	apis := []struct{ groupVersion, resource, missing string }{
		{v1.GroupVersion.String(), "modelservings", "the ModelServing CRD (modelservings.serving.kubectl-llm.dev) is not installed: run kubectl llm install"},
		{lwsv1.GroupVersion.String(), "leaderworkersets", "the LeaderWorkerSet CRD is not installed: install LeaderWorkerSet, or run kubectl llm install --lws=embedded and let the operator host it"},
	}
	deadline := time.Now().Add(timeout)
	for _, api := range apis {
		for {
			list, err := dc.ServerResourcesForGroupVersion(api.groupVersion)
			if err == nil && hasResource(list.APIResources, api.resource) {
				break
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("cannot reach the API server at %s: %w", cfg.Host, err)
			}
			if time.Now().After(deadline) {
				return errors.New(api.missing)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func hasResource(rs []metav1.APIResource, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := NewManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
