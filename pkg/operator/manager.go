package operator

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
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
	MetricsAddr string
	ProbeAddr   string
	// PprofAddr serves net/http/pprof (for measuring the operator); off when empty or "0".
	PprofAddr               string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election (controller-runtime's
	// 15 s, 10 s and 2 s when zero): a leader that cannot renew within RenewDeadline steps down
	// (the process exits), and another takes over once LeaseDuration has passed since the
	// last renewal.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Namespace, when set, restricts the operator to one namespace.
	Namespace    string
	HistoryLimit int
	// LWS is external, embedded or auto.
	LWS     string
	Webhook WebhookOptions
	// Metrics registry; controller-runtime's global registry when nil.
	Registry crmetrics.RegistererGatherer
	// Failpoints stop the process at a named point of a reconcile pass (the fault suite's
	// KUBECTL_LLM_FAILPOINT); inert when zero.
	Failpoints failpoint.Set
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
	// ServingWorkers is how many servings are reconciled at once; LWSWorkers, how many
	// LeaderWorkerSets (and their pods) the embedded LWS reconciles at once. A pass mostly waits
	// on the API server, so a burst of servings is served in parallel rather than in turn.
	ServingWorkers, LWSWorkers int
	// ServiceCreators is how many new Services the operator creates at once (see serviceMaker).
	ServiceCreators int
}

// Default concurrency of the controllers (see Options.ServingWorkers).
const (
	DefaultServingWorkers = 16
	DefaultLWSWorkers     = 8
)

// The metrics and probe endpoints' default ports (`kubectl llm operator` listens on every
// interface in the cluster, on loopback outside it).
const (
	DefaultMetricsAddr = ":8080"
	DefaultProbeAddr   = ":8081"
)

// DefaultOptions are the defaults of `kubectl llm operator`.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:      DefaultMetricsAddr,
		ProbeAddr:        DefaultProbeAddr,
		LeaderElect:      true,
		LeaderElectionID: "kubectl-llm-operator",
		HistoryLimit:     DefaultHistoryLimit,
		LWS:              LWSAuto,
		Webhook:          DefaultWebhookOptions(),
		ServingWorkers:   DefaultServingWorkers,
		LWSWorkers:       DefaultLWSWorkers,
		ServiceCreators:  DefaultServiceCreators,
	}
}

// hasLabels selects the objects that carry every one of the keys.
func hasLabels(keys ...string) labels.Selector {
	sel := labels.NewSelector()
	for _, k := range keys {
		req, err := labels.NewRequirement(k, selection.Exists, nil)
		if err != nil {
			panic(err)
		}
		sel = sel.Add(*req)
	}
	return sel
}

// mainCacheOptions are what the manager's cache holds: never every object of a kind the cluster
// has many of. Without embedded LWS: ModelServings, the pods of servings and FailedCreate events
// (our Services, ControllerRevisions and LeaderWorkerSets are in the children cache). With
// embedded LWS, also what the LWS controllers read, each kind selected by LWS's own label:
// their pods, StatefulSets, headless Services and ControllerRevisions (every LeaderWorkerSet
// and the nodes, for exclusive placement, are cached whole, as LWS needs them). Managed fields
// are dropped from every cached object: nothing reads them.
func mainCacheOptions(mode string) cache.Options {
	pods := hasLabels(v1.LabelName)
	byObject := map[client.Object]cache.ByObject{
		// Only the events that say a LeaderWorkerSet or StatefulSet cannot create what it must.
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("reason", status.EventFailedCreate)},
	}
	if mode == LWSEmbedded {
		// LWS needs every pod it made, which all carry its set-name label; ours carry both.
		lwsMade := hasLabels(lwsv1.SetNameLabelKey)
		pods = lwsMade
		byObject[&appsv1.StatefulSet{}] = cache.ByObject{Label: lwsMade}
		byObject[&corev1.Service{}] = cache.ByObject{Label: lwsMade}
		byObject[&appsv1.ControllerRevision{}] = cache.ByObject{Label: lwsMade}
	}
	// One key per kind: the keys are pointers, so a second &corev1.Pod{} would be a second entry.
	byObject[&corev1.Pod{}] = cache.ByObject{Label: pods}
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: byObject}
}

// newChildrenCache is the cache of the serving's own children, apart from the manager's so that
// each kind can be selected by our labels whatever LWS hosting caches of the same kinds: Services
// and LeaderWorkerSets carrying our name label, ControllerRevisions carrying our revision hash.
// Objects with a child's name that are not ours are not cached: observe asks the API server
// about a child the cache does not hold.
func newChildrenCache(mgr manager.Manager, namespace string) (cache.Cache, error) {
	o := childrenCacheOptions(namespace)
	o.HTTPClient, o.Scheme, o.Mapper = mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper()
	c, err := cache.New(mgr.GetConfig(), o)
	if err != nil {
		return nil, fmt.Errorf("create the children cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

func childrenCacheOptions(namespace string) cache.Options {
	o := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Service{}:            {Label: hasLabels(v1.LabelName)},
			&lwsv1.LeaderWorkerSet{}:     {Label: hasLabels(v1.LabelName)},
			&appsv1.ControllerRevision{}: {Label: hasLabels(v1.LabelName, revision.LabelHash)},
		},
	}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return o
}

// childReader reads LeaderWorkerSets from one reader and every other kind from another.
type childReader struct {
	client.Reader
	lws client.Reader
}

func (c childReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*lwsv1.LeaderWorkerSet); ok {
		return c.lws.Get(ctx, key, obj, opts...)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c childReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*lwsv1.LeaderWorkerSetList); ok {
		return c.lws.List(ctx, list, opts...)
	}
	return c.Reader.List(ctx, list, opts...)
}

// NewManager builds the manager with the ModelServing reconciler and, when asked or needed,
// the embedded LWS reconcilers and webhooks.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	mgr, _, cleanup, err := newManager(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(onStop(cleanup)); err != nil {
		cleanup()
		return nil, err
	}
	return mgr, nil
}

// onStop is a runnable of every replica, leader or not, that calls f once the manager stops.
type onStop func()

func (f onStop) Start(ctx context.Context) error { <-ctx.Done(); f(); return nil }

func (onStop) NeedLeaderElection() bool { return false }

// newManager is NewManager, the webhook server that outlives the manager's stop to hand the
// webhooks over (nil unless the operator elects a leader and is called by URL), and what to
// call once it and that server stopped: it removes the temporary certificate directory the
// operator made (a laptop's operator left one, private key included, in the temp directory at
// every run).
func newManager(ctx context.Context, cfg *rest.Config, opts Options) (_ manager.Manager, _ *lingeringServer, cleanup func(), err error) {
	cleanup = func() {}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if err := WaitForAPIs(ctx, cfg, 10*time.Second); err != nil {
		return nil, nil, cleanup, err
	}
	mode, err := resolveLWSMode(ctx, cfg, opts.LWS)
	if err != nil {
		return nil, nil, cleanup, err
	}
	ctrl.Log.WithName("setup").Info("LeaderWorkerSet hosting", "mode", mode)

	cacheOpts := mainCacheOptions(mode)
	if opts.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	mopts := ctrl.Options{
		Scheme:                        scheme.New(),
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrTo(15 * time.Second),
	}
	if opts.LeaseDuration > 0 {
		mopts.LeaseDuration = &opts.LeaseDuration
	}
	if opts.RenewDeadline > 0 {
		mopts.RenewDeadline = &opts.RenewDeadline
	}
	if opts.RetryPeriod > 0 {
		mopts.RetryPeriod = &opts.RetryPeriod
	}
	var fence func() error // nil without leader election
	if opts.LeaderElect {
		fenced, f, err := fenceElection(cfg, &mopts, opts)
		if err != nil {
			return nil, nil, cleanup, err
		}
		cfg = fenced
		fence = f.check
	}
	// The default for controllers that set none: the embedded LWS reconcilers, whose single
	// upstream worker otherwise makes StatefulSets one serving at a time (the scale harness saw
	// 14 s of queueing at 100 servings). Eight: a pass is a few requests in a row, so more
	// workers shorten its queue while the API server keeps up; past that, more passes of the
	// same LeaderWorkerSets (fewer events merged in the queue) only load it more. A burst of
	// 300 arriving 20 a second was Ready at p50 in 13.0 s with 4, 12.2 s with 8, and 23.9 and
	// 35.3 s with 16 (docs/performance.md, session 16).
	mopts.Controller.MaxConcurrentReconciles = cmp.Or(opts.LWSWorkers, DefaultLWSWorkers)
	if opts.SkipNameValidation {
		mopts.Controller.SkipNameValidation = ptrTo(true)
	}
	var certs *webhookCerts
	var lingering *lingeringServer
	if mode == LWSEmbedded {
		certs, err = prepareWebhookCerts(opts.Webhook, time.Now())
		if err != nil {
			return nil, nil, cleanup, err
		}
		if certs.temporary {
			cleanup = func() { _ = os.RemoveAll(certs.dir) }
		}
		mopts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: opts.Webhook.BindHost, Port: opts.Webhook.Port, CertDir: certs.dir,
			TLSOpts: []func(*tls.Config){webhookTLS},
		})
		if opts.LeaderElect && opts.Webhook.URLHost != "" {
			lingering = newLingeringServer(mopts.WebhookServer)
			mopts.WebhookServer = lingering
		}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, nil, cleanup, fmt.Errorf("create manager: %w", err)
	}
	reg := opts.Registry
	if reg == nil {
		reg = crmetrics.Registry
	}
	metrics, err := NewMetrics(reg)
	if err != nil {
		return nil, nil, cleanup, fmt.Errorf("register metrics: %w", err)
	}
	ObserveClientThrottle()
	children, err := newChildrenCache(mgr, opts.Namespace)
	if err != nil {
		return nil, nil, cleanup, err
	}
	r := &Reconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("kubectl-llm"),
		Clock: clock.RealClock{}, HistoryLimit: opts.HistoryLimit, Metrics: metrics,
		Children: children, ChildrenCache: children, Live: mgr.GetAPIReader(), Failpoints: opts.Failpoints,
		Workers: cmp.Or(opts.ServingWorkers, DefaultServingWorkers), ServiceCreators: opts.ServiceCreators,
	}
	if mode == LWSEmbedded {
		// The embedded LWS caches every LeaderWorkerSet anyway: read ours from there.
		r.Children = childReader{Reader: children, lws: mgr.GetCache()}
		r.LWSSource = mgr.GetCache()
		r.AdmitLWS = true // the embedded webhooks skip our own LeaderWorkerSet writes
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, nil, cleanup, fmt.Errorf("set up the ModelServing controller: %w", err)
	}
	if mode == LWSEmbedded {
		rotatorName := opts.Webhook.ConfigName + "-cert-rotator"
		if opts.SkipNameValidation {
			rotatorName += "-" + strconv.FormatInt(managerSeq.Add(1), 10)
		}
		if err := setupEmbeddedLWS(mgr, opts.Webhook, certs, rotatorName, fence, opts.Failpoints); err != nil {
			return nil, nil, cleanup, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, cleanup, err
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
		return nil, nil, cleanup, err
	}
	return mgr, lingering, cleanup, nil
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
// An operator called by URL with leader election hands its webhooks over to the next leader
// before it stops serving them (see lingeringServer).
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, lingering, cleanup, err := newManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer cleanup()
	err = mgr.Start(ctx)
	if lingering != nil {
		cs, csErr := NewKube(cfg)
		if csErr != nil {
			lingering.end()
			return errors.Join(err, csErr)
		}
		lingering.handOver(cs, opts, handoverTimingOf(opts))
	}
	return err
}
