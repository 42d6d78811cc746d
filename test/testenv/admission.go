package testenv

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AdmissionProbe sends a LeaderWorkerSet admission every period: a server-side dry-run create,
// which goes through the embedded LWS's mutating and validating webhooks and stores nothing.
// Stop ends it and says how many were tried and refused, and when.
type AdmissionProbe struct {
	stop chan struct{}
	done chan AdmissionResult
}

// AdmissionResult is what an AdmissionProbe saw.
type AdmissionResult struct {
	Tries, Failures       int
	First                 error     // the first refusal
	FirstFail, LastFail   time.Time // when the first and the last refused request was sent
	LongestFailingStretch time.Duration
}

// Gap is the time from the first refused admission to the last one (0 when none failed).
func (r AdmissionResult) Gap() time.Duration {
	if r.Failures == 0 {
		return 0
	}
	return r.LastFail.Sub(r.FirstFail)
}

func (r AdmissionResult) String() string {
	if r.Failures == 0 {
		return fmt.Sprintf("%d admissions, none refused", r.Tries)
	}
	return fmt.Sprintf("%d admissions, %d refused over %s (the first: %v)", r.Tries, r.Failures, r.Gap().Round(10*time.Millisecond), r.First)
}

// ProbeAdmission starts an AdmissionProbe in namespace ns with c; image is the LWS's container
// image (it is never pulled: nothing is stored).
func ProbeAdmission(c client.Client, ns, image string, period time.Duration) *AdmissionProbe {
	// Unstructured, so that only the fields set here are sent (the typed struct would send its
	// zero values, which the schema refuses before any webhook is asked).
	lws := func(i int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
			"metadata": map[string]any{"name": fmt.Sprintf("probe-%d", i), "namespace": ns},
			"spec": map[string]any{"replicas": int64(0), "leaderWorkerTemplate": map[string]any{
				"size": int64(1),
				"workerTemplate": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "engine", "image": image}}}},
			}},
		}}
	}
	p := &AdmissionProbe{stop: make(chan struct{}), done: make(chan AdmissionResult, 1)}
	go func() {
		var r AdmissionResult
		var failingSince time.Time
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				p.done <- r
				return
			default:
			}
			r.Tries++
			sent := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			err := c.Create(ctx, lws(i), client.DryRunAll)
			cancel()
			if err != nil {
				r.Failures++
				if r.First == nil {
					r.First, r.FirstFail = err, sent
				}
				if failingSince.IsZero() {
					failingSince = sent
				}
				r.LastFail = sent
				if d := sent.Sub(failingSince); d > r.LongestFailingStretch {
					r.LongestFailingStretch = d
				}
			} else {
				failingSince = time.Time{}
			}
			time.Sleep(period)
		}
	}()
	return p
}

// Stop ends the probe and returns what it saw.
func (p *AdmissionProbe) Stop() AdmissionResult {
	close(p.stop)
	return <-p.done
}
