package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// TestFaultsSoakServings (FAULTS_SOAK=1 only; not one of the suite's counted cases): 2000
// servings of 0 groups (FAULTS_SOAK_SERVINGS to change) created and, once the operator has made
// their children and reported them, deleted, while it runs. Its memory must not keep them: its
// live heap, read after a forced garbage collection (pprof's heap endpoint with gc=1), returns
// within 8 MiB of its baseline (within 13 minutes: the event recorder's cache keeps each event 6
// to 12), and its RSS, sampled every half second, near its baseline (within half of it again
// plus 32 MiB) at its lowest meanwhile: the RSS alone cannot tell what the process keeps from
// what the Go runtime has not yet given back to the system.
func TestFaultsSoakServings(t *testing.T) {
	if !soak {
		t.Skip("a soak of 2000 servings takes over 7 min, beyond the CI budget; run it with FAULTS_SOAK=1 (docs/reliability.md)")
	}
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("FAULTS_SOAK_SERVINGS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	ns := namespace(t)
	time.Sleep(10 * time.Second) // its caches filled, its start-up garbage collected
	op.mu.Lock()
	pprofPort := op.pprof
	op.mu.Unlock()
	heapBaseline, err := liveHeap(pprofPort)
	if err != nil {
		t.Fatal(err)
	}
	saveHeapProfile(t, pprofPort, "baseline")
	pid := func() int {
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.cmd.Process.Pid
	}()
	baseline, err := rssOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			if r, err := rssOf(pid); err == nil && r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	defer func() {
		close(stop)
		sampler.Wait()
	}()
	started := time.Now()
	each := func(do func(i int) error) {
		var wg sync.WaitGroup
		work := make(chan int)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					if err := do(i); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	// soak0001, not soak-0001: a serving's name may not end in -<number>.
	each(func(i int) error {
		return kc.Create(ctx, newServing(ns, fmt.Sprintf("soak%04d", i), 0, 2, 1))
	})
	created := time.Since(started)
	testenv.Eventually(t, 15*time.Minute, "every serving's children made and its status reported", func() (bool, error) {
		list := &v1.ModelServingList{}
		if err := kc.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, ms := range list.Items {
			if ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != "" {
				done++
			}
		}
		return done == n, fmt.Errorf("%d of %d reported", done, n)
	})
	reported := time.Since(started)
	full, _ := rssOf(pid)
	heapFull, _ := liveHeap(pprofPort)
	// One by one, 16 at a time: a delete-collection of thousands is one request, which the API
	// server may time out under load.
	each(func(i int) error {
		return client.IgnoreNotFound(kc.Delete(ctx, &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("soak%04d", i)}}))
	})
	testenv.Eventually(t, 15*time.Minute, "every serving and LeaderWorkerSet gone", func() (bool, error) {
		ms, lws := &v1.ModelServingList{}, &lwsv1.LeaderWorkerSetList{}
		if err := kc.List(ctx, ms, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if err := kc.List(ctx, lws, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(ms.Items) == 0 && len(lws.Items) == 0, fmt.Errorf("%d servings, %d LeaderWorkerSets left", len(ms.Items), len(lws.Items))
	})
	gone := time.Since(started)
	// Once they are gone the operator gets at least 60 s, and until its live heap is back within
	// the bound (up to 13 minutes: the event recorder, client-go's events broadcaster, keeps each
	// event it sent, for series, until a sweep every 6 minutes finds it older than 6 minutes, a
	// cache bounded by age, not servings kept). The RSS is the lowest of that whole time: the Go
	// runtime returns freed pages to the system over minutes.
	after := int64(1) << 62
	rssLow := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			if r, err := rssOf(pid); err == nil && r < after {
				after = r
			}
		}
	}
	rssLow(60 * time.Second)
	heapAfter, err := liveHeap(pprofPort)
	if err != nil {
		t.Fatal(err)
	}
	saveHeapProfile(t, pprofPort, "after")
	heapSettled := time.Duration(0)
	for heapAfter > heapBaseline+8<<20 && heapSettled < 13*time.Minute {
		rssLow(30 * time.Second)
		heapSettled += 30 * time.Second
		if heapAfter, err = liveHeap(pprofPort); err != nil {
			t.Fatal(err)
		}
	}
	if heapSettled > 0 {
		saveHeapProfile(t, pprofPort, "settled")
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("%d servings of 0 groups: created in %s, all reported at %s, all gone at %s; operator RSS baseline %s, peak %s, with all of them %s (live heap %s), lowest in the %s after %s; live heap after a forced GC: baseline %s, after %s",
		n, created.Round(time.Second), reported.Round(time.Second), gone.Round(time.Second), mib(baseline), mib(peak.Load()), mib(full), mib(heapFull), 60*time.Second+heapSettled, mib(after), mib(heapBaseline), mib(heapAfter))
	if heapAfter > heapBaseline+8<<20 {
		violation(t, "the operator's live heap is %s 13 minutes after the servings went (baseline %s): it keeps something of them", mib(heapAfter), mib(heapBaseline))
	}
	if after > baseline+baseline/2+32<<20 {
		violation(t, "the operator's RSS stays at %s after the servings went (baseline %s): it keeps what it cached of them", mib(after), mib(baseline))
	}
	if err := operatorHealthy(); err != nil {
		violation(t, "%v", err)
	}
}

// liveHeap is the operator's heap in use right after a garbage collection, from its pprof
// endpoint (heap?gc=1 collects first; debug=1 ends with the runtime's MemStats).
func liveHeap(port int) (int64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", port))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in the operator's heap profile (status %s)", resp.Status)
}

// saveHeapProfile keeps the operator's heap profile, right after a forced garbage collection, in
// .e2e/soak-heap/<what>.pb.gz at the top of the checkout (git ignores it), so that what the
// operator kept is told by `go tool pprof -sample_index=inuse_space -base baseline.pb.gz
// after.pb.gz`.
func saveHeapProfile(t *testing.T, port int, what string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", port))
	if err != nil {
		t.Logf("heap profile %s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	dir := filepath.Join("..", "..", ".e2e", "soak-heap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("heap profile %s: %v", what, err)
		return
	}
	f, err := os.Create(filepath.Join(dir, what+".pb.gz"))
	if err != nil {
		t.Logf("heap profile %s: %v", what, err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Logf("heap profile %s: %v", what, err)
		return
	}
	t.Logf("the operator's heap profile (%s) is in %s", what, f.Name())
}
