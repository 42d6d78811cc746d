package operator

import (
	"context"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// blockingServer stands in for the webhook server: it serves until its context ends.
type blockingServer struct {
	webhook.Server
	stopped chan struct{}
}

func (s *blockingServer) Start(ctx context.Context) error {
	<-ctx.Done()
	close(s.stopped)
	return nil
}

func (*blockingServer) Register(string, http.Handler) {}

var fastHandover = handoverTiming{takeLease: 300 * time.Millisecond, total: 3 * time.Second, linger: 50 * time.Millisecond, poll: 10 * time.Millisecond}

func handoverOptions() Options {
	o := DefaultOptions()
	o.LeaderElectionNamespace = InstallNamespace
	o.Webhook.URLHost, o.Webhook.Port = "127.0.0.1", 9443
	return o
}

// startLingering starts a lingering server under a manager context and stops that context, as the
// manager's stop does; the inner server must still serve.
func startLingering(t *testing.T) (*lingeringServer, *blockingServer) {
	t.Helper()
	inner := &blockingServer{stopped: make(chan struct{})}
	s := newLingeringServer(inner)
	mgrCtx, stop := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- s.Start(mgrCtx) }()
	time.Sleep(20 * time.Millisecond)
	stop()
	select {
	case <-returned:
	case <-time.After(time.Second):
		t.Fatal("Start did not return when the manager stopped")
	}
	select {
	case <-inner.stopped:
		t.Fatal("the webhook server stopped with the manager")
	default:
	}
	return s, inner
}

func TestHandOverWaitsUntilTheConfigurationsCallTheNextLeader(t *testing.T) {
	o := handoverOptions()
	cs := fake.NewClientset()
	ctx := context.Background()
	if err := ApplyWebhookConfigurations(ctx, cs, o.Webhook, []byte("ca")); err != nil {
		t.Fatal(err)
	}
	s, inner := startLingering(t)
	next := o.Webhook
	next.Port++
	go func() {
		time.Sleep(time.Second) // longer than takeLease: the Lease is taken, so it waits on
		_, _ = cs.CoordinationV1().Leases(InstallNamespace).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: o.LeaderElectionID}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("next")}}, metav1.CreateOptions{})
	}()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = ApplyWebhookConfigurations(ctx, cs, next, []byte("ca"))
	}()
	began := time.Now()
	s.handOver(cs, o, fastHandover)
	took := time.Since(began)
	select {
	case <-inner.stopped:
	default:
		t.Fatal("handOver returned with the webhook server still serving")
	}
	// No Lease until 1 s: it would stop at takeLease (0.3 s) only if the Lease stayed free;
	// a Lease that does not exist cannot be read and counts as taken.
	if took < 1500*time.Millisecond || took > 2500*time.Millisecond {
		t.Errorf("handOver took %s, want until the configurations moved (1.5 s) and a linger", took)
	}
}

func TestHandOverStopsWhenNobodyTakesTheLease(t *testing.T) {
	o := handoverOptions()
	cs := fake.NewClientset()
	ctx := context.Background()
	if err := ApplyWebhookConfigurations(ctx, cs, o.Webhook, []byte("ca")); err != nil {
		t.Fatal(err)
	}
	// Released, as controller-runtime leaves it: no holder.
	if _, err := cs.CoordinationV1().Leases(InstallNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: o.LeaderElectionID}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, inner := startLingering(t)
	began := time.Now()
	s.handOver(cs, o, fastHandover)
	took := time.Since(began)
	<-inner.stopped
	if took < fastHandover.takeLease || took > fastHandover.takeLease+time.Second {
		t.Errorf("handOver took %s with the Lease free, want about %s", took, fastHandover.takeLease)
	}
}

func TestHandOverGivesUpAfterItsTotal(t *testing.T) {
	o := handoverOptions()
	cs := fake.NewClientset() // no configurations, no Lease: nothing moves
	s, inner := startLingering(t)
	timing := fastHandover
	timing.total = 800 * time.Millisecond
	began := time.Now()
	s.handOver(cs, o, timing)
	<-inner.stopped
	if took := time.Since(began); took < timing.total || took > timing.total+time.Second {
		t.Errorf("handOver took %s, want its total %s", took, timing.total)
	}
}
