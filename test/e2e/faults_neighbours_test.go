package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// neighbourCounts is how many unrelated objects of each kind hostileNeighbours makes: 3000 in
// all (~30 s to make on 2 shared cores), ten times as many with FAULTS_SOAK=1.
func neighbourCounts() (services, revisions, statefulSets, pods int) {
	if soak {
		return 10000, 10000, 8000, 2000
	}
	return 1000, 1000, 800, 200
}

// neighbourRSSBound is how much the operator's RSS may grow while the neighbours are made.
const neighbourRSSBound = 10 << 20

// hostileNeighbours: while the operator runs, thousands of objects that are none of its business
// are made in other namespaces: Services, ControllerRevisions, StatefulSets (0 replicas; the
// StatefulSet controller gives each a ControllerRevision of its own) and pods no scheduler picks
// up, none carrying our labels or LWS's. The operator's caches select by label at the API server,
// so its memory does not follow them (RSS growth under 10 MiB, measured after a settle), it makes
// no request about them (none names their namespaces, no list of those kinds, no relist) beyond
// the watches it holds, and a serving still rolls out. The operator runs behind a proxy that
// records its requests.
func hostileNeighbours(t *testing.T, ns, name string) {
	var mu sync.Mutex
	var recording bool
	var requests []string // method and URI of every request while recording
	kubeconfig := newAPIProxy(t, func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		if recording {
			requests = append(requests, r.Method+" "+r.URL.RequestURI())
		}
		mu.Unlock()
		return false
	})
	operatorAt(t, kubeconfig)
	copies := watchForCopies(t, ns, name)
	waitReady(t, ns, name, settle)
	time.Sleep(5 * time.Second) // the start's lists done, the heap settled
	baseline := peakRSS(t, 3*time.Second)

	services, revisions, statefulSets, pods := neighbourCounts()
	namespaces := make([]string, 4)
	for i := range namespaces {
		namespaces[i] = namespace(t)
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	fault(t, fmt.Sprintf("make %d Services, %d ControllerRevisions, %d StatefulSets and %d pods in %d other namespaces", services, revisions, statefulSets, pods, len(namespaces)))
	began := time.Now()
	makeNeighbours(t, namespaces, services, revisions, statefulSets, pods)
	made := time.Since(began)
	time.Sleep(5 * time.Second) // their events delivered, the StatefulSets' revisions made
	mu.Lock()
	recording = false
	seen := append([]string(nil), requests...)
	mu.Unlock()
	after := peakRSS(t, 3*time.Second)
	t.Logf("%d objects made in %s; operator RSS %d MiB before, %d MiB after (%+d KiB); %d requests meanwhile",
		services+revisions+statefulSets+pods, made.Round(100*time.Millisecond), baseline>>20, after>>20, (after-baseline)>>10, len(seen))
	if after-baseline > neighbourRSSBound {
		violation(t, "the operator's RSS grew by %d MiB with the neighbours (bound %d MiB)", (after-baseline)>>20, neighbourRSSBound>>20)
	}
	var aboutThem []string
	for _, r := range seen {
		for _, n := range namespaces {
			if strings.Contains(r, "/namespaces/"+n+"/") {
				aboutThem = append(aboutThem, r)
			}
		}
		if strings.HasPrefix(r, "GET ") && !strings.Contains(r, "watch=true") {
			for _, kind := range []string{"/services?", "/controllerrevisions?", "/statefulsets?", "/pods?"} {
				if strings.Contains(r, kind) {
					aboutThem = append(aboutThem, r)
				}
			}
		}
	}
	if len(aboutThem) > 0 {
		violation(t, "the operator made %d requests about the neighbours or lists of their kinds, the first: %s", len(aboutThem), aboutThem[0])
	}
	// Besides its webhook repair (4 requests every 10 s), a converged operator has nothing to ask.
	var others []string
	for _, r := range seen {
		if !strings.Contains(r, "/apis/admissionregistration.k8s.io/") {
			others = append(others, r)
		}
	}
	t.Logf("%d of them besides the webhook repair", len(others))
	if len(others) > 20 {
		violation(t, "the operator made %d requests besides its webhook repair while the neighbours were made (converged, it should make almost none): %s", len(others), strings.Join(others[:10], ", "))
	}
	// A serving still rolls out among them.
	rollout := time.Now()
	update(t, ns, name, newImage)
	waitReady(t, ns, name, settle)
	t.Logf("a rolling update among the neighbours done in %s", time.Since(rollout).Round(100*time.Millisecond))
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}

// peakRSS is the operator's highest RSS sampled every 0.5 s for d.
func peakRSS(t *testing.T, d time.Duration) int64 {
	t.Helper()
	var peak int64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		op.mu.Lock()
		pid := op.cmd.Process.Pid
		op.mu.Unlock()
		rss, err := rssOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, rss)
	}
	return peak
}

// makeNeighbours makes the unrelated objects, spread over the namespaces, with 32 requests at a
// time and no client-side rate limit.
func makeNeighbours(t *testing.T, namespaces []string, services, revisions, statefulSets, pods int) {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	objs := make(chan client.Object, 64)
	go func() {
		defer close(objs)
		for i := range max(services, revisions, statefulSets, pods) {
			ns := namespaces[i%len(namespaces)]
			meta := func(kind string) metav1.ObjectMeta {
				return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", kind, i), Labels: map[string]string{"app": fmt.Sprintf("neighbour-%d", i)}}
			}
			sel := map[string]string{"app": fmt.Sprintf("neighbour-%d", i)}
			if i < services {
				objs <- &corev1.Service{ObjectMeta: meta("svc"), Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel,
					Ports: []corev1.ServicePort{{Port: 80}}}}
			}
			if i < revisions {
				objs <- &appsv1.ControllerRevision{ObjectMeta: meta("rev"), Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"image":"x"}}`)}}
			}
			if i < statefulSets {
				objs <- &appsv1.StatefulSet{ObjectMeta: meta("sts"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: sel},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
			}
			if i < pods {
				objs <- &corev1.Pod{ObjectMeta: meta("pod"), Spec: corev1.PodSpec{SchedulerName: "nobody", // stays Pending, unscheduled
					Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			}
		}
	}()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range objs {
				if err := c.Create(context.Background(), o); err != nil {
					if failed.Add(1) == 1 {
						first.Store(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d neighbours not made, the first: %v", n, first.Load())
	}
}
