package operator

import (
	"cmp"
	"context"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// lingeringServer is the webhook server of an operator with leader election whose webhook
// configurations call it by URL (outside the cluster: every replica has its own address, and only
// the leader's is in the configurations). controller-runtime stops the webhook server before it
// releases the Lease, and the next leader points the configurations at itself only once it holds
// the Lease (up to its retry period later): in between the API server calls an address where
// nothing answers, and LeaderWorkerSet and pod admission fail (the fault suite measured 2–4 s at
// each handover). So this server outlives the manager: the manager's stop leaves it serving, and
// handOver ends it once the configurations call another operator, or once no other took the
// Lease. In the cluster the configurations call the Service in front of every replica, and the
// Deployment's preStop sleep covers its endpoints catching up.
type lingeringServer struct {
	webhook.Server
	serve   context.Context // the inner server's; cancelled by handOver
	end     context.CancelFunc
	started atomic.Bool
	done    chan struct{} // closed once the inner server stopped
}

func newLingeringServer(s webhook.Server) *lingeringServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &lingeringServer{Server: s, serve: ctx, end: cancel, done: make(chan struct{})}
}

// Start runs the inner server until handOver ends it; it returns when the manager stops (ctx),
// with the server still serving.
func (s *lingeringServer) Start(ctx context.Context) error {
	s.started.Store(true)
	errc := make(chan error, 1)
	go func() {
		errc <- s.Server.Start(s.serve)
		close(s.done)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

// handoverTiming bounds handOver: how long another replica may take to acquire the released
// Lease (client-go tries every retry period, jittered by up to 1.2 periods more), and how long
// it may take, holding it, to point the configurations at itself.
type handoverTiming struct {
	takeLease, total, linger, poll time.Duration
}

func handoverTimingOf(o Options) handoverTiming {
	retry := cmp.Or(o.RetryPeriod, 2*time.Second)
	return handoverTiming{
		takeLease: retry*22/10 + time.Second,
		total:     cmp.Or(o.LeaseDuration, 15*time.Second),
		// The API server reads the configurations through an informer: a moment more for it,
		// and for admissions already sent here.
		linger: time.Second,
		poll:   100 * time.Millisecond,
	}
}

// handOver, called once the manager stopped (its Lease released), keeps serving until the
// webhook configurations call another address than ours (another replica leads and took them),
// until no other replica took the Lease within timing.takeLease, or at most timing.total; then
// stops the server.
func (s *lingeringServer) handOver(cs Kube, o Options, timing handoverTiming) {
	defer func() {
		s.end()
		if s.started.Load() {
			<-s.done
		}
	}()
	if !s.started.Load() {
		return
	}
	log := ctrl.Log.WithName("lws-webhooks")
	ours := net.JoinHostPort(o.Webhook.URLHost, strconv.Itoa(o.Webhook.Port))
	ctx, cancel := context.WithTimeout(context.Background(), timing.total)
	defer cancel()
	began := time.Now()
	log.Info("Serving the LWS webhooks until another replica takes them over", "at most", timing.total)
	for {
		if other, ok := calledElsewhere(ctx, cs, o.Webhook.ConfigName, ours); ok {
			time.Sleep(timing.linger)
			log.Info("Handed the LWS webhooks over", "to", other, "after", time.Since(began).Round(time.Millisecond))
			return
		}
		if time.Since(began) > timing.takeLease && leaseFree(ctx, cs, o) {
			log.Info("No other replica took the Lease: stopping the LWS webhooks", "after", time.Since(began).Round(time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			log.Info("The webhook configurations still call this operator: stopping the LWS webhooks", "after", time.Since(began).Round(time.Millisecond))
			return
		case <-time.After(timing.poll):
		}
	}
}

// calledElsewhere reports whether every webhook of the configurations calls a URL whose host is
// not ours, and which.
func calledElsewhere(ctx context.Context, cs Kube, configName, ours string) (string, bool) {
	hooks, err := webhookClientConfigs(ctx, cs, configName)
	if err != nil || len(hooks) == 0 {
		return "", false
	}
	for _, cc := range hooks {
		if cc.URL == nil {
			return "", false
		}
		u, err := url.Parse(*cc.URL)
		if err != nil || u.Host == ours {
			return "", false
		}
	}
	return *hooks[0].URL, true
}

// leaseFree reports whether the election Lease is held by nobody (as this operator left it); a
// Lease that cannot be read counts as taken, so handOver waits its full time.
func leaseFree(ctx context.Context, cs Kube, o Options) bool {
	if o.LeaderElectionNamespace == "" {
		return false
	}
	l, err := cs.CoordinationV1().Leases(o.LeaderElectionNamespace).Get(ctx, o.LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == ""
}
