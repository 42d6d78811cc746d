package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"

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
	rec := operatorRecorded(t)
	copies := watchForCopies(t, ns, name)
	waitReady(t, ns, name, settle)
	time.Sleep(5 * time.Second) // the start's lists done, the heap settled
	baseline := peakRSS(t, 3*time.Second)

	services, revisions, statefulSets, pods := neighbourCounts()
	namespaces := make([]string, 4)
	for i := range namespaces {
		namespaces[i] = namespace(t)
	}
	rec.start()
	fault(t, fmt.Sprintf("make %d Services, %d ControllerRevisions, %d StatefulSets and %d pods in %d other namespaces", services, revisions, statefulSets, pods, len(namespaces)))
	began := time.Now()
	makeNeighbours(t, namespaces, nil, services, revisions, statefulSets, pods)
	made := time.Since(began)
	time.Sleep(5 * time.Second) // their events delivered, the StatefulSets' revisions made
	seen := rec.stop()
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
	// Besides the watch of its webhook configurations, a converged operator has nothing to ask.
	var others []string
	for _, r := range seen {
		if !strings.Contains(r, "/apis/admissionregistration.k8s.io/") {
			others = append(others, r)
		}
	}
	t.Logf("%d of them besides the webhook configurations' watch", len(others))
	if len(others) > 20 {
		violation(t, "the operator made %d requests besides its webhook configurations' watch while the neighbours were made (converged, it should make almost none): %s", len(others), strings.Join(others[:10], ", "))
	}
	// A serving still rolls out among them.
	rollout := time.Now()
	update(t, ns, name, newImage)
	waitReady(t, ns, name, settle)
	t.Logf("a rolling update among the neighbours done in %s", time.Since(rollout).Round(100*time.Millisecond))
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}

// requestRecorder records the method and URI of every request the operator sends between start
// and stop.
type requestRecorder struct {
	mu        sync.Mutex
	recording bool
	requests  []string
}

func (r *requestRecorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording, r.requests = true, nil
}

func (r *requestRecorder) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.requests
}

// operatorRecorded runs the operator behind a proxy that records its requests, until the test
// ends.
func operatorRecorded(t *testing.T) *requestRecorder {
	t.Helper()
	rec := &requestRecorder{}
	operatorAt(t, newAPIProxy(t, func(_ http.ResponseWriter, r *http.Request) bool {
		rec.mu.Lock()
		if rec.recording {
			rec.requests = append(rec.requests, r.Method+" "+r.URL.RequestURI())
		}
		rec.mu.Unlock()
		return false
	}))
	return rec
}

// labelledNeighbours: objects in other namespaces that carry our labels and LWS's (naming a
// serving and a LeaderWorkerSet of this serving's name, group 0, worker 0) but that no serving or
// LeaderWorkerSet made: Services, ControllerRevisions (with a revision hash), StatefulSets and
// pods. The operator caches them (its caches select by those labels) but they are none of its
// business: it writes none of them (no request but a GET names their namespaces, none is changed,
// owned or deleted), and the serving of that name beside them stays converged.
func labelledNeighbours(t *testing.T, ns, name string) {
	rec := operatorRecorded(t)
	copies := watchForCopies(t, ns, name)
	waitReady(t, ns, name, settle)
	namespaces := []string{namespace(t), namespace(t)}
	labels := map[string]string{
		v1.LabelName: name, v1.LabelManagedBy: "kubectl-llm", v1.LabelRevision: "1", revision.LabelHash: "forged",
		lwsv1.SetNameLabelKey: name, lwsv1.GroupIndexLabelKey: "0", lwsv1.WorkerIndexLabelKey: "0",
	}
	const each = 200
	rec.start()
	fault(t, fmt.Sprintf("make %d Services, ControllerRevisions, StatefulSets and pods carrying our labels and LWS's in %d other namespaces", each, len(namespaces)))
	makeNeighbours(t, namespaces, labels, each, each, each, each)
	time.Sleep(5 * time.Second) // their events delivered and handled
	seen := rec.stop()
	var writes, reads int
	for _, r := range seen {
		for _, n := range namespaces {
			if !strings.Contains(r, "/namespaces/"+n+"/") {
				continue
			}
			if strings.HasPrefix(r, "GET ") {
				reads++
			} else {
				writes++
				if writes == 1 {
					violation(t, "the operator wrote an object it does not own: %s", r)
				}
			}
		}
	}
	t.Logf("%d requests while they were made; %d reads and %d writes naming their namespaces", len(seen), reads, writes)
	if writes > 1 {
		violation(t, "%d writes to objects the operator does not own in all", writes)
	}
	for _, n := range namespaces {
		checkNeighboursUntouched(t, n, labels, each/len(namespaces))
	}
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}

// checkNeighboursUntouched: every labelled neighbour in ns still exists, with no owner and its
// labels as made; those nothing else writes (all but the StatefulSets, whose status the
// StatefulSet controller keeps) are at the version they were made with.
func checkNeighboursUntouched(t *testing.T, ns string, labels map[string]string, want int) {
	t.Helper()
	ctx := context.Background()
	lists := map[string]client.ObjectList{"Service": &corev1.ServiceList{}, "ControllerRevision": &appsv1.ControllerRevisionList{},
		"StatefulSet": &appsv1.StatefulSetList{}, "Pod": &corev1.PodList{}}
	for kind, list := range lists {
		if err := kc.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: labels[v1.LabelName]}); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		// The StatefulSet controller's own revisions carry the template's labels too.
		made := 0
		for _, item := range items {
			o := item.(client.Object)
			if kind == "ControllerRevision" && len(o.GetOwnerReferences()) > 0 && o.GetOwnerReferences()[0].Kind == "StatefulSet" {
				continue
			}
			made++
			if len(o.GetOwnerReferences()) > 0 {
				violation(t, "%s %s/%s was given an owner: %v", kind, ns, o.GetName(), o.GetOwnerReferences())
			}
			for k, v := range labels {
				if o.GetLabels()[k] != v {
					violation(t, "%s %s/%s label %s is %q, was made %q", kind, ns, o.GetName(), k, o.GetLabels()[k], v)
				}
			}
			if kind != "StatefulSet" && len(o.GetManagedFields()) != 1 {
				violation(t, "%s %s/%s was written after it was made: %v", kind, ns, o.GetName(), managers(o))
			}
		}
		if made != want {
			violation(t, "%d %ss with our labels in %s, %d were made", made, kind, ns, want)
		}
	}
}

func managers(o client.Object) []string {
	var out []string
	for _, f := range o.GetManagedFields() {
		out = append(out, f.Manager+":"+string(f.Operation))
	}
	return out
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
// time and no client-side rate limit; each carries labels too when given.
func makeNeighbours(t *testing.T, namespaces []string, labels map[string]string, services, revisions, statefulSets, pods int) {
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
			sel := map[string]string{"app": fmt.Sprintf("neighbour-%d", i)}
			own := maps.Clone(sel)
			maps.Copy(own, labels)
			meta := func(kind string) metav1.ObjectMeta {
				return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", kind, i), Labels: own}
			}
			if i < services {
				objs <- &corev1.Service{ObjectMeta: meta("svc"), Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel,
					Ports: []corev1.ServicePort{{Port: 80}}}}
			}
			if i < revisions {
				rev := meta("rev")
				// Not the StatefulSets' app label: the StatefulSet controller adopts the revisions
				// its selector matches.
				rev.Labels = maps.Clone(own)
				rev.Labels["app"] = fmt.Sprintf("neighbour-rev-%d", i)
				objs <- &appsv1.ControllerRevision{ObjectMeta: rev, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"image":"x"}}`)}}
			}
			if i < statefulSets {
				objs <- &appsv1.StatefulSet{ObjectMeta: meta("sts"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: sel},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: own},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
			}
			if i < pods {
				pod := &corev1.Pod{ObjectMeta: meta("pod"), Spec: corev1.PodSpec{SchedulerName: "nobody", // stays Pending, unscheduled
					Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
				if own[lwsv1.SetNameLabelKey] != "" {
					// LWS's pod webhook refuses a pod of a set without its group size.
					pod.Annotations = map[string]string{lwsv1.SizeAnnotationKey: "1"}
				}
				objs <- pod
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
