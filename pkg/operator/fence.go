package operator

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// leaseFence keeps a leader that lost its Lease without knowing it (a process frozen by SIGSTOP,
// a VM paused, a long GC pause, then resumed) from writing with what its stale caches hold. A
// leader that cannot renew within the renew deadline steps down anyway, and another may take
// over once the lease duration (longer) has passed since the last renewal it saw; so a write is
// refused once this process's last renewal is older than the renew deadline. A process that never
// led (a follower, whose every-replica runnables may write) is not fenced.
type leaseFence struct {
	renewDeadline time.Duration
	now           func() time.Time
	// renewed is when the last acquisition or renewal that went through was sent (this
	// process's monotonic clock); nil until it leads.
	renewed atomic.Pointer[time.Time]
}

// check is nil while writes may go out.
func (f *leaseFence) check() error {
	last := f.renewed.Load()
	if last == nil {
		return nil
	}
	if age := f.now().Sub(*last); age > f.renewDeadline {
		return fmt.Errorf("not written: this operator last renewed its leader election Lease %s ago, more than its renew deadline (%s), so another replica may lead; it steps down",
			age.Round(time.Millisecond), f.renewDeadline)
	}
	return nil
}

// lock records each acquisition and renewal of the Lease that went through.
func (f *leaseFence) lock(l resourcelock.Interface) resourcelock.Interface { return fencedLock{l, f} }

type fencedLock struct {
	resourcelock.Interface
	f *leaseFence
}

func (l fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.f.now()
	err := l.Interface.Create(ctx, ler)
	l.record(ler, sent, err)
	return err
}

func (l fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.f.now()
	err := l.Interface.Update(ctx, ler)
	l.record(ler, sent, err)
	return err
}

// record keeps when a write of the record naming this process as the holder was sent, once it
// went through: the API server saw the renewal after that.
func (l fencedLock) record(ler resourcelock.LeaderElectionRecord, sent time.Time, err error) {
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.f.renewed.Store(&sent)
	}
}

// transport refuses every write (any request but GET, HEAD and OPTIONS: create, update,
// patch, apply, delete, of objects and of their subresources) while check fails; reads and
// watches go through. On the manager's rest.Config it fences every client made from it: the
// manager's, the embedded LWS's, the webhook keeper's clientset, the event recorder's.
func (f *leaseFence) transport(next http.RoundTripper) http.RoundTripper {
	return fencedTransport{next: next, f: f}
}

type fencedTransport struct {
	next http.RoundTripper
	f    *leaseFence
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.f.check(); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// fenceElection makes the manager's Lease lock fenced and returns the rest.Config the manager
// and every client of it are to use, cfg with its writes fenced (see leaseFence), and the fence,
// which the webhook keeper also asks before each write. The lock itself is made from cfg:
// renewals are never refused.
func fenceElection(cfg *rest.Config, mopts *ctrl.Options, opts Options) (*rest.Config, *leaseFence, error) {
	f := &leaseFence{renewDeadline: 10 * time.Second, now: time.Now}
	if opts.RenewDeadline > 0 {
		f.renewDeadline = opts.RenewDeadline
	}
	l, err := leaderelection.NewResourceLock(cfg, noEvents{}, leaderelection.Options{
		LeaderElection: true, LeaderElectionID: opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace, RenewDeadline: f.renewDeadline,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("leader election lock: %w", err)
	}
	mopts.LeaderElectionResourceLockInterface = f.lock(l)
	fenced := rest.CopyConfig(cfg)
	fenced.Wrap(f.transport)
	return fenced, f, nil
}

// noEvents: the Lease's "became leader" events are not recorded (the operator logs them).
type noEvents struct{}

func (noEvents) GetEventRecorderFor(string) record.EventRecorder { return nil }
func (noEvents) GetEventRecorder(string) recorder.EventRecorder  { return nil }
