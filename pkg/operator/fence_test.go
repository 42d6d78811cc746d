package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fakeLock is a Lease lock whose writes go through (or fail with err).
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (l fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l fakeLock) Identity() string                                                { return "me" }

// TestLeaseFence: a process that never led writes freely; a leader writes while its last renewal
// is younger than the renew deadline, and not once it is older (frozen past its lease); a failed
// renewal or one naming another holder does not count.
func TestLeaseFence(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &leaseFence{renewDeadline: 3 * time.Second, now: func() time.Time { return now }}
	c := f.client(fake.NewClientBuilder().Build())
	write := func(name string) error {
		return c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
	}
	if err := write("follower"); err != nil {
		t.Fatalf("a process that never led: %v", err)
	}
	ctx := context.Background()
	if err := f.lock(fakeLock{}).Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if err := write("fresh"); err != nil {
		t.Fatalf("2 s after a renewal (deadline 3 s): %v", err)
	}
	_ = f.lock(fakeLock{err: errors.New("conflict")}).Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	_ = f.lock(fakeLock{}).Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "someone-else"})
	now = now.Add(2 * time.Second)
	if err := write("stale"); err == nil {
		t.Fatal("4 s after the last renewal that went through (deadline 3 s): written")
	} else {
		t.Log(err)
	}
	if err := c.Status().Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fresh"}}); err == nil {
		t.Fatal("a status write of a stale leader went through")
	}
	if err := f.lock(fakeLock{}).Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := write("renewed"); err != nil {
		t.Fatalf("right after a renewal: %v", err)
	}
}
