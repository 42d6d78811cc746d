package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// The invariants the fault suite checks after every case (issue 15), as one reusable piece:
//
//  1. children: exactly one LWS and one <name>-api Service, at most the history limit of
//     ControllerRevisions, each controlled by the live UID of the serving;
//  2. never two copies of a group: at every pod event, at most one live pod per (group, worker);
//  3. status caught up: observedGeneration == generation, Ready, counts that match the pods;
//  4. quiet when converged: no write to the serving, its LWS, Service or revisions for a while;
//  5. the operator healthy: alive, no panic in its log and no secret value (a private key, a
//     token, the kubeconfig's credentials), RSS under its limit, its goroutines not growing (at
//     most half again its first count, and 100);
//  6. the embedded LWS webhooks: both webhook configurations call the live operator, and their CA
//     bundle verifies the certificate it serves there.
//
// violations counts what failed over the whole suite, lost the servings that did not end with
// their children and ready groups, for its summary line; recoveries are the measured times.
var suite struct {
	mu                          sync.Mutex
	cases, faults, violations   int
	checkedInvariants, servings int
	lost, failedCases           int
	maxGoroutines               int // the most goroutines an operator ran at a check
	recoveries                  []recovery
	faultAt                     map[string]time.Time // test name -> its first fault
}

// recovery is how long one case took from its fault to the settled, quiet state.
type recovery struct {
	name string
	took time.Duration
}

// historyLimit is the operator's default number of ControllerRevisions per serving.
const historyLimit = 10

// operatorRSSLimit is the memory limit of the shipped Deployment.
const operatorRSSLimit = 512 << 20

// copyWatch records, from an informer on the serving's pods, every moment two live pods claimed
// the same (group, worker).
type copyWatch struct {
	mu     sync.Mutex
	dupes  []string
	events int
	stop   chan struct{}
}

func watchForCopies(t *testing.T, ns, name string) *copyWatch {
	t.Helper()
	w := &copyWatch{stop: make(chan struct{})}
	inf := podInformer(t, ns, name)
	check := func(any) {
		seen := map[string]string{}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		for _, obj := range inf.GetStore().List() {
			p := obj.(*corev1.Pod)
			if p.DeletionTimestamp != nil || !madeByAStatefulSet(p) {
				continue
			}
			key := p.Labels[lwsv1.GroupIndexLabelKey] + "/" + p.Labels[lwsv1.WorkerIndexLabelKey]
			if other, dup := seen[key]; dup && p.Labels[lwsv1.GroupIndexLabelKey] != "" {
				w.dupes = append(w.dupes, fmt.Sprintf("group/worker %s: %s and %s", key, other, p.Name))
			}
			seen[key] = p.Name
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: check, UpdateFunc: func(_, o any) { check(o) }, DeleteFunc: check,
	}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(w.stop)
	if !toolscache.WaitForCacheSync(w.stop, inf.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	t.Cleanup(func() { close(w.stop) })
	return w
}

// podInformer is an informer on the pods of a serving (by our name label).
func podInformer(t *testing.T, ns, name string) toolscache.SharedInformer {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	selector := v1.LabelName + "=" + name
	lw := &toolscache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods(ns).List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods(ns).Watch(context.Background(), o)
		},
	}
	return toolscache.NewSharedInformer(lw, &corev1.Pod{}, 0)
}

// checkInvariants checks the five invariants for a settled serving of replicas groups of size
// pods; copies is the watch started before the fault. quiet is how long it must stay unwritten.
func checkInvariants(t *testing.T, ns, name string, replicas, size int, copies *copyWatch, quietWindow time.Duration) {
	t.Helper()
	var failed []string
	fail := func(inv string, err error) {
		if err != nil {
			failed = append(failed, inv+": "+err.Error())
		}
	}
	// 3 and 1 first, given time to recover: the rest only means something once the operator has
	// caught up. A status that looks caught up may be one the operator has not yet revised after
	// the fault; so the system has until the deadline to show a quiet window after catching up,
	// and a serving written again and again never gets one.
	deadline := time.Now().Add(3 * settle)
	var caught, children, quiet error
	for {
		caught = statusCaughtUp(t, ns, name, replicas, size)
		children = childrenOwnedByTheLiveServing(ns, name)
		if caught == nil && children == nil {
			recovered(t)
			if quiet = quietFor(ns, name, quietWindow); quiet == nil {
				// settled and quiet: check the end state again, it may have moved in the window
				caught = statusCaughtUp(t, ns, name, replicas, size)
				children = childrenOwnedByTheLiveServing(ns, name)
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fail("status caught up", caught)
	fail("children", children)
	fail("quiet when converged", quiet)
	if copies != nil {
		copies.mu.Lock()
		if len(copies.dupes) > 0 {
			fail("one copy of each group", fmt.Errorf("%d moments with two copies, first: %s", len(copies.dupes), copies.dupes[0]))
		}
		copies.mu.Unlock()
	}
	fail("operator healthy", operatorHealthy())
	fail("webhooks call the live operator", webhooksCallTheLiveOperator(leader()))
	suite.mu.Lock()
	suite.checkedInvariants += 6
	suite.servings++
	suite.violations += len(failed)
	if caught != nil || children != nil {
		suite.lost++
	}
	suite.mu.Unlock()
	if len(failed) > 0 {
		t.Errorf("invariants violated for %s/%s:\n  %s", ns, name, strings.Join(failed, "\n  "))
	}
}

func statusCaughtUp(t *testing.T, ns, name string, replicas, size int) error {
	var last error
	deadline := time.Now().Add(2 * settle)
	for time.Now().Before(deadline) {
		ms := &v1.ModelServing{}
		if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
			return err
		}
		ready := readyGroups(live(pods(t, ns, name)), size)
		switch {
		case ms.Status.ObservedGeneration != ms.Generation:
			last = fmt.Errorf("observedGeneration %d, generation %d", ms.Status.ObservedGeneration, ms.Generation)
		case ms.Status.Phase != v1.PhaseReady:
			last = fmt.Errorf("phase %s", ms.Status.Phase)
		case int(ms.Status.ReadyReplicas) != replicas || ready != replicas || int(ms.Status.UpdatedReplicas) != replicas:
			last = fmt.Errorf("status ready %d updated %d, pods ready %d, want %d", ms.Status.ReadyReplicas, ms.Status.UpdatedReplicas, ready, replicas)
		case ms.Status.CurrentRevision != ms.Status.UpdateRevision:
			last = fmt.Errorf("current revision %s, update revision %s", ms.Status.CurrentRevision, ms.Status.UpdateRevision)
		default:
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

func childrenOwnedByTheLiveServing(ns, name string) error {
	ctx := context.Background()
	ms := &v1.ModelServing{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
		return err
	}
	ours := func(o metav1.Object) error {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "ModelServing" || ref.UID != ms.UID {
			return fmt.Errorf("%s is controlled by %+v, not the live serving %s", o.GetName(), ref, ms.UID)
		}
		return nil
	}
	var lwsList lwsv1.LeaderWorkerSetList
	if err := kc.List(ctx, &lwsList, client.InNamespace(ns)); err != nil {
		return err
	}
	n := 0
	for i := range lwsList.Items {
		if lwsList.Items[i].Name == name {
			n++
			if err := ours(&lwsList.Items[i]); err != nil {
				return err
			}
		}
	}
	if n != 1 {
		return fmt.Errorf("%d LeaderWorkerSets named %s", n, name)
	}
	svc := &corev1.Service{}
	if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, svc); err != nil {
		return fmt.Errorf("the serving's Service: %w", err)
	}
	if err := ours(svc); err != nil {
		return err
	}
	if svc.Spec.Selector[v1.LabelName] != name {
		return fmt.Errorf("the Service %s selects %v", svc.Name, svc.Spec.Selector)
	}
	var revs appsv1.ControllerRevisionList
	if err := kc.List(ctx, &revs, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}, client.HasLabels{"serving.kubectl-llm.dev/revision-hash"}); err != nil {
		return err
	}
	if len(revs.Items) == 0 || len(revs.Items) > historyLimit {
		return fmt.Errorf("%d ControllerRevisions, want 1 to %d", len(revs.Items), historyLimit)
	}
	for i := range revs.Items {
		if err := ours(&revs.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// quietFor: no resourceVersion of the serving, its LWS, Service or revisions moves for d.
func quietFor(ns, name string, d time.Duration) error {
	versions := func() (map[string]string, error) {
		ctx := context.Background()
		out := map[string]string{}
		objs := map[string]client.Object{
			"ModelServing": &v1.ModelServing{}, "LeaderWorkerSet": &lwsv1.LeaderWorkerSet{},
		}
		for kind, o := range objs {
			if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, o); err != nil {
				return nil, err
			}
			out[kind] = o.GetResourceVersion()
		}
		svc := &corev1.Service{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-api"}, svc); err != nil {
			return nil, err
		}
		out["Service"] = svc.ResourceVersion
		var revs appsv1.ControllerRevisionList
		if err := kc.List(ctx, &revs, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
			return nil, err
		}
		for _, r := range revs.Items {
			out["ControllerRevision/"+r.Name] = r.ResourceVersion
		}
		return out, nil
	}
	status := func() string {
		ms := &v1.ModelServing{}
		_ = kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms)
		raw, _ := json.Marshal(ms.Status)
		return string(raw)
	}
	before, err := versions()
	if err != nil {
		return err
	}
	statusBefore := status()
	time.Sleep(d)
	after, err := versions()
	if err != nil {
		return err
	}
	for k, v := range before {
		if after[k] != v {
			what := ""
			if k == "ModelServing" {
				what = "; status before " + statusBefore + " after " + status()
			}
			return fmt.Errorf("%s written while converged (resourceVersion %s -> %s within %s)%s", k, v, after[k], d, what)
		}
	}
	if len(after) != len(before) {
		return fmt.Errorf("children changed while converged: %d -> %d objects", len(before), len(after))
	}
	return nil
}

// operatorHealthy: the operator process is alive, its log has no panic, its RSS is under the
// Deployment's memory limit.
func operatorHealthy() error {
	op.mu.Lock()
	cmd, pprof := op.cmd, op.pprof
	op.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("the operator is not running (stopped by the test)")
	}
	if !op.running() {
		return fmt.Errorf("the operator is not running: it exited with status %d; its last words:\n%s", op.exitCode(), op.lastWords())
	}
	if log, err := os.ReadFile(op.logPath); err == nil {
		if i := strings.Index(string(log), "panic:"); i >= 0 {
			return fmt.Errorf("the operator log has a panic: %.200s", string(log)[i:])
		}
		if what := secretIn(string(log)); what != "" {
			return fmt.Errorf("the operator log (%s) holds %s", op.logPath, what)
		}
	}
	rss, err := rssOf(cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("the operator process: %w", err)
	}
	if rss > operatorRSSLimit {
		return fmt.Errorf("operator RSS %d MiB over its %d MiB limit", rss>>20, operatorRSSLimit>>20)
	}
	n, err := goroutinesOf(pprof)
	if err != nil {
		return fmt.Errorf("the operator's goroutines: %w", err)
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.goroutines0 == 0 {
		op.goroutines0 = n
	}
	suite.mu.Lock()
	suite.maxGoroutines = max(suite.maxGoroutines, n)
	suite.mu.Unlock()
	// Goroutines are per informer, worker and connection, never per serving or pass: a process
	// that has more than half again its first count (and 100) keeps some it should have ended.
	if limit := op.goroutines0 + op.goroutines0/2 + 100; n > limit {
		return fmt.Errorf("the operator runs %d goroutines, more than %d (its first check counted %d): they grow", n, limit, op.goroutines0)
	}
	return nil
}

// goroutinesOf counts the goroutines of the operator whose pprof endpoint is at port.
func goroutinesOf(port int) (int, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", port))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &n); err != nil {
		return 0, fmt.Errorf("the goroutine profile begins %q: %w", first, err)
	}
	return n, nil
}

// secretIn says what secret value the log holds, "" when none: a PEM private key (the webhook
// certificates' or the kubeconfig's), a JSON Web Token (a ServiceAccount token begins so), or the
// client key or token of the cluster's kubeconfig.
func secretIn(log string) string {
	if strings.Contains(log, "PRIVATE KEY-----") {
		return "a PEM private key"
	}
	if strings.Contains(log, "eyJhbGciOi") {
		return "a JSON Web Token (a ServiceAccount token?)"
	}
	for _, secret := range kubeconfigSecrets() {
		if strings.Contains(log, secret) {
			return "a credential of the cluster's kubeconfig"
		}
	}
	return ""
}

// kubeconfigSecrets are the client keys and tokens of the cluster's kubeconfig, as they are
// written there (base64) and as they are (the first line of a key's PEM body).
var kubeconfigSecrets = sync.OnceValue(func() []string {
	cfg, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range cfg.AuthInfos {
		if a.Token != "" {
			out = append(out, a.Token)
		}
		if len(a.ClientKeyData) > 0 {
			out = append(out, base64.StdEncoding.EncodeToString(a.ClientKeyData)[:64])
			if lines := strings.Split(string(a.ClientKeyData), "\n"); len(lines) > 1 && len(lines[1]) >= 32 {
				out = append(out, lines[1])
			}
		}
	}
	return out
})

// rssOf is the resident memory of a process, in bytes.
func rssOf(pid int) (int64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// fault records an injected fault for the summary line.
func fault(t *testing.T, what string) {
	t.Helper()
	suite.mu.Lock()
	suite.faults++
	if suite.faultAt == nil {
		suite.faultAt = map[string]time.Time{}
	}
	if _, ok := suite.faultAt[t.Name()]; !ok {
		suite.faultAt[t.Name()] = time.Now()
	}
	suite.mu.Unlock()
	t.Logf("fault: %s", what)
}

// recovered logs and records the time from a case's first fault to now, once per case.
func recovered(t *testing.T) {
	t.Helper()
	suite.mu.Lock()
	defer suite.mu.Unlock()
	since, ok := suite.faultAt[t.Name()]
	if !ok {
		return
	}
	delete(suite.faultAt, t.Name())
	took := time.Since(since).Round(100 * time.Millisecond)
	t.Logf("recovered (status caught up, children right) %s after the fault", took)
	suite.recoveries = append(suite.recoveries, recovery{t.Name(), took})
}

// violation records a failed check that is not one of the six invariants (a case's own
// expectation) in the summary, and fails the test.
func violation(t *testing.T, format string, args ...any) {
	t.Helper()
	suite.mu.Lock()
	suite.violations++
	suite.mu.Unlock()
	t.Errorf(format, args...)
}

// leader is the operator process that should hold the webhook configurations: op, unless a case
// runs others (leader election) and says which one leads.
var leaderProcess struct {
	sync.Mutex
	p *operatorProcess
}

func leader() *operatorProcess {
	leaderProcess.Lock()
	defer leaderProcess.Unlock()
	if leaderProcess.p != nil {
		return leaderProcess.p
	}
	return op
}

// webhooksCallTheLiveOperator: every webhook of the embedded LWS configurations calls
// https://127.0.0.1:<the live operator's port>, and a TLS handshake there verifies with the
// configuration's CA bundle for that host.
func webhooksCallTheLiveOperator(p *operatorProcess) error {
	ctx := context.Background()
	p.mu.Lock()
	port := p.port
	p.mu.Unlock()
	type hook struct {
		name string
		cc   admissionv1.WebhookClientConfig
	}
	var hooks []hook
	m := &admissionv1.MutatingWebhookConfiguration{}
	if err := kc.Get(ctx, types.NamespacedName{Name: webhookConfigName}, m); err != nil {
		return err
	}
	for _, w := range m.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig})
	}
	v := &admissionv1.ValidatingWebhookConfiguration{}
	if err := kc.Get(ctx, types.NamespacedName{Name: webhookConfigName}, v); err != nil {
		return err
	}
	for _, w := range v.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig})
	}
	if len(hooks) != 4 {
		return fmt.Errorf("%d webhooks in the configurations %s, want 4", len(hooks), webhookConfigName)
	}
	for _, h := range hooks {
		if h.cc.URL == nil {
			return fmt.Errorf("webhook %s has no URL", h.name)
		}
		u, err := url.Parse(*h.cc.URL)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", h.name, err)
		}
		if u.Port() != strconv.Itoa(port) {
			return fmt.Errorf("webhook %s calls %s, not the live operator's port %d", h.name, u.Host, port)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(h.cc.CABundle) {
			return fmt.Errorf("webhook %s: the CA bundle holds no certificate", h.name)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", u.Host, &tls.Config{RootCAs: roots, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err != nil {
			return fmt.Errorf("webhook %s: the certificate served at %s does not verify with the CA bundle: %w", h.name, u.Host, err)
		}
		_ = conn.Close()
	}
	return nil
}

// webhookConfigName names the embedded LWS webhook configurations.
const webhookConfigName = "kubectl-llm-lws"

// countCase counts a case for the summary, and whether it failed, however it failed.
func countCase(t *testing.T) {
	suite.mu.Lock()
	suite.cases++
	suite.mu.Unlock()
	t.Cleanup(func() {
		if t.Failed() {
			suite.mu.Lock()
			suite.failedCases++
			suite.mu.Unlock()
		}
	})
}

// faultCase counts a case and waits until the serving it made is Ready, as the starting point.
func faultCase(t *testing.T, ns string, ms *v1.ModelServing) {
	t.Helper()
	countCase(t)
	if err := kc.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, ms.Name, settle)
}

// TestZZFaultSummary prints the suite's counts (it runs after the fault cases: tests run in file
// order, and this file sorts after faults_test.go).
func TestZZFaultSummary(t *testing.T) {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	lost := "nothing lost"
	if suite.lost > 0 {
		lost = fmt.Sprintf("%d servings lost or short of groups", suite.lost)
	}
	t.Logf("fault suite: %d cases (%d failed), %d faults injected, %d invariants checked on %d servings, %d violations, %s",
		suite.cases, suite.failedCases, suite.faults, suite.checkedInvariants, suite.servings, suite.violations, lost)
	t.Logf("operator goroutines at a check: at most %d", suite.maxGoroutines)
	sort.Slice(suite.recoveries, func(i, j int) bool { return suite.recoveries[i].name < suite.recoveries[j].name })
	for _, r := range suite.recoveries {
		t.Logf("recovery %-90s %s", r.name, r.took)
	}
}
