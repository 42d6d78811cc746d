package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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

// client refuses every write (create, update, patch, apply, delete, of objects and of their
// subresources) while check fails; reads go through.
func (f *leaseFence) client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return f.then(func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return f.then(func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return f.then(func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return f.then(func() error { return c.Apply(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return f.then(func() error { return c.Delete(ctx, obj, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return f.then(func() error { return c.DeleteAllOf(ctx, obj, opts...) })
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return f.then(func() error { return c.SubResource(sub).Create(ctx, obj, subObj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return f.then(func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return f.then(func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			return f.then(func() error { return c.SubResource(sub).Apply(ctx, obj, opts...) })
		},
	})
}

func (f *leaseFence) then(write func() error) error {
	if err := f.check(); err != nil {
		return err
	}
	return write()
}

// fenceElection makes the manager's Lease lock and client fenced (see leaseFence).
func fenceElection(cfg *rest.Config, mopts *ctrl.Options, opts Options) error {
	f := &leaseFence{renewDeadline: 10 * time.Second, now: time.Now}
	if opts.RenewDeadline > 0 {
		f.renewDeadline = opts.RenewDeadline
	}
	l, err := leaderelection.NewResourceLock(cfg, noEvents{}, leaderelection.Options{
		LeaderElection: true, LeaderElectionID: opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace, RenewDeadline: f.renewDeadline,
	})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	mopts.LeaderElectionResourceLockInterface = f.lock(l)
	mopts.NewClient = func(config *rest.Config, options client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(config, options)
		if err != nil {
			return nil, err
		}
		return f.client(c), nil
	}
	return nil
}

// noEvents: the Lease's "became leader" events are not recorded (the operator logs them).
type noEvents struct{}

func (noEvents) GetEventRecorderFor(string) record.EventRecorder { return nil }
func (noEvents) GetEventRecorder(string) recorder.EventRecorder  { return nil }
