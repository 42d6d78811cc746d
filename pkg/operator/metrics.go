package operator

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	clientmetrics "k8s.io/client-go/tools/metrics"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// Metrics are the operator's own metrics, next to controller-runtime's.
type Metrics struct {
	reconcile     prometheus.Histogram
	groupsReady   *prometheus.GaugeVec
	groupsDesired *prometheus.GaugeVec
	rollout       prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg (controller-runtime's registry in
// the manager; a fresh one in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubectl_llm_reconcile_duration_seconds", Help: "Time one ModelServing reconcile pass takes.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		groupsReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubectl_llm_groups_ready", Help: "Groups of a ModelServing whose every pod is ready.",
		}, []string{"namespace", "name"}),
		groupsDesired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubectl_llm_groups_desired", Help: "Groups a ModelServing asks for (spec.replicas).",
		}, []string{"namespace", "name"}),
		rollout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubectl_llm_rollout_duration_seconds", Help: "Time from a new revision to a completed rollout.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
	}
	for _, c := range []prometheus.Collector{m.reconcile, m.groupsReady, m.groupsDesired, m.rollout} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ClientThrottleMetric is the time the process's requests wait in client-go's rate limiter
// (--kube-api-qps, --kube-api-burst) before they are sent: our reconciler's and the embedded
// LWS's alike, since they share the client. It is 0 while the API server keeps up; under a burst
// it is what the limit costs.
const ClientThrottleMetric = "kubectl_llm_client_rate_limiter_wait_seconds"

var observeThrottle sync.Once

// ObserveClientThrottle registers ClientThrottleMetric with controller-runtime's registry (the
// manager serves it at /metrics, beside client-go's request counts) and has client-go report its
// rate limiter's waits to it. client-go has one hook for the whole process, so only the first
// call does anything.
func ObserveClientThrottle() {
	observeThrottle.Do(func() {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ClientThrottleMetric, Help: "Time a request waited in the client-side rate limiter before it was sent.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"verb"})
		if err := crmetrics.Registry.Register(h); err != nil {
			return
		}
		clientmetrics.RateLimiterLatency = throttleObserver{h}
	})
}

type throttleObserver struct{ h *prometheus.HistogramVec }

func (o throttleObserver) Observe(_ context.Context, verb string, _ url.URL, wait time.Duration) {
	o.h.WithLabelValues(verb).Observe(wait.Seconds())
}

func (m *Metrics) observeReconcile(d time.Duration) {
	if m != nil {
		m.reconcile.Observe(d.Seconds())
	}
}

func (m *Metrics) observeRollout(d time.Duration) {
	if m != nil {
		m.rollout.Observe(d.Seconds())
	}
}

func (m *Metrics) observeServing(ms *v1.ModelServing, sum status.Summary) {
	if m != nil {
		m.groupsReady.WithLabelValues(ms.Namespace, ms.Name).Set(float64(sum.Ready))
		m.groupsDesired.WithLabelValues(ms.Namespace, ms.Name).Set(float64(sum.Desired))
	}
}

func (m *Metrics) forget(key types.NamespacedName) {
	if m != nil {
		m.groupsReady.DeleteLabelValues(key.Namespace, key.Name)
		m.groupsDesired.DeleteLabelValues(key.Namespace, key.Name)
	}
}
