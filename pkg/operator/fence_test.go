package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
// renewal or one naming another holder does not count. Reads and watches always go through. The
// clients are client-go clientsets made from a config wrapped as fenceElection wraps the
// manager's (every client of the manager, the webhook keeper's too), against a server that counts
// what reaches it.
func TestLeaseFence(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}`))
	}))
	defer srv.Close()
	now := time.Unix(1000, 0)
	f := &leaseFence{renewDeadline: 3 * time.Second, now: func() time.Time { return now }}
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(f.transport)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	write := func(name string) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := write("follower"); err != nil {
		t.Fatalf("a process that never led: %v", err)
	}
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
	before := reached.Load()
	stale := map[string]func() error{
		"create": func() error { return write("stale") },
		"status update": func() error {
			_, err := cs.CoreV1().Pods("ns").UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, metav1.UpdateOptions{})
			return err
		},
		"patch": func() error {
			_, err := cms.Patch(ctx, "fresh", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		},
		"delete": func() error { return cms.Delete(ctx, "fresh", metav1.DeleteOptions{}) },
	}
	for what, do := range stale {
		if err := do(); err == nil || !strings.Contains(err.Error(), "renew deadline") {
			t.Errorf("a %s 4 s after the last renewal that went through (deadline 3 s): %v, want refused", what, err)
		}
	}
	if n := reached.Load() - before; n != 0 {
		t.Errorf("%d refused writes reached the API server", n)
	}
	if _, err := cms.Get(ctx, "fresh", metav1.GetOptions{}); err != nil {
		t.Errorf("a read of a stale leader: %v, want it to go through", err)
	}
	if err := f.lock(fakeLock{}).Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := write("renewed"); err != nil {
		t.Fatalf("right after a renewal: %v", err)
	}
}
