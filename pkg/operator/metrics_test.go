package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// slowLimiter lets each request through after a fixed wait, as a rate limiter over its QPS does.
type slowLimiter struct{ wait time.Duration }

func (l slowLimiter) TryAccept() bool { return true }
func (l slowLimiter) Accept()         { time.Sleep(l.wait) }
func (l slowLimiter) Stop()           {}
func (l slowLimiter) QPS() float32    { return 1 }
func (l slowLimiter) Wait(ctx context.Context) error {
	time.Sleep(l.wait)
	return ctx.Err()
}

// The waits of a client's requests in its rate limiter are counted in the throttle metric, by
// verb, and add up to at least the waits imposed.
func TestTheClientsRateLimiterWaitsAreMeasured(t *testing.T) {
	ObserveClientThrottle()
	ObserveClientThrottle() // a second call (a second manager in one process) changes nothing
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	count0, sum0 := throttleOf(t, "GET")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, RateLimiter: slowLimiter{wait: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	count, sum := throttleOf(t, "GET")
	if count-count0 != 3 {
		t.Fatalf("%v GET waits recorded, want 3", count-count0)
	}
	if sum-sum0 < 0.06 {
		t.Fatalf("the waits add up to %.3fs, less than the 3×20 ms imposed", sum-sum0)
	}
}

// throttleOf is the throttle metric's count and sum for verb, from controller-runtime's registry.
func throttleOf(t *testing.T, verb string) (count uint64, sum float64) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != ClientThrottleMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" && l.GetValue() == verb {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}
