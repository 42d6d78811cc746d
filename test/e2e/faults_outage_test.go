package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// shortLease is the election timing of the outage cases: a lease of 4 s, renewed within 3 s,
// tried every second (the defaults are 15 s, 10 s and 2 s), so that "longer than the lease" and
// "longer than the renew deadline" fit in the suite's time.
var shortLease = []string{"--leader-elect=true", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"}

// soak: FAULTS_SOAK=1 runs the slow cases too (they are not among the cases the default run, and
// so CI, counts).
var soak = os.Getenv("FAULTS_SOAK") == "1"

// TestFaultsOutage: the operator's process, its election and what it depends on (the LWS CRD,
// etcd) taken away; one at a time, each from a serving made Ready ahead in its own namespace.
// The OOM-kill loop (~20 s) and the etcd outage (~50 s, most of it the API server reconnecting
// to etcd and kube-controller-manager waiting out its own lease) run with FAULTS_SOAK=1 only.
func TestFaultsOutage(t *testing.T) {
	all := []struct {
		seqCase
		slow bool
	}{
		{seqCase{name: "the LWS CRD removed while a serving exists, then installed again", run: lwsCRDRemoved}, false},
		{seqCase{name: "two replicas: the leader SIGSTOPped longer than its lease, then resumed", run: leaderStoppedPastItsLease}, false},
		{seqCase{name: "operator OOM-killed in a loop during a rolling update", shape: func(ms *v1.ModelServing) {
			ms.Spec.Replicas = ptr.To[int32](4)
			ms.Annotations[v1.AnnotationSimulatedLoadDelay] = "3s"
		}, run: oomKilledInALoop}, true},
		{seqCase{name: "etcd stopped longer than the operator's renew deadline mid rolling update", run: etcdStoppedPastTheRenewDeadline}, true},
	}
	var seq []seqCase
	for _, c := range all {
		if c.slow && !soak {
			t.Logf("%q runs with FAULTS_SOAK=1", c.name)
			continue
		}
		seq = append(seq, c.seqCase)
	}
	inTurn(t, "o", seq, servingsAhead(t, "o", seq))
	// Checked last, when kube-controller-manager has had time to collect what a case left to it.
	for _, c := range lastChecks {
		t.Run(c.name, c.check)
	}
	lastChecks = nil
}

// lastChecks are checks the cases leave to the end of the test (they wait on the cluster, not on
// the operator).
var lastChecks []struct {
	name  string
	check func(t *testing.T)
}

const lwsCRD = "leaderworkersets.leaderworkerset.x-k8s.io"

// lwsCRDRemoved: the LeaderWorkerSet CRD deleted (every LeaderWorkerSet with it, their groups
// garbage collected) while a serving runs. The serving says so (Degraded LeaderWorkerSetMissing)
// without a hot loop, and can be deleted: its finalizer does not wait for children that cannot
// exist. With the CRD installed again a new serving runs.
func lwsCRDRemoved(t *testing.T, ns, name string) {
	ctx := context.Background()
	installed := false
	defer func() {
		if !installed { // the other tests share the cluster
			if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
				t.Error(err)
			}
		}
	}()
	crd := lwsCRDOfTheInstall(t)
	fault(t, "delete the LeaderWorkerSet CRD")
	deleting := time.Now()
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig, "delete", "crd", lwsCRD, "--timeout=60s").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("the CRD gone %s after its deletion", time.Since(deleting).Round(100*time.Millisecond))
	var said string
	took := testenv.Eventually(t, settle, "the serving Degraded LeaderWorkerSetMissing", func() (bool, error) {
		c := meta.FindStatusCondition(getServing(t, ns, name).Status.Conditions, v1.ConditionDegraded)
		if c != nil {
			said = c.Message
		}
		return c != nil && c.Status == "True" && c.Reason == v1.ReasonLeaderWorkerSetMissing, fmt.Errorf("%+v", c)
	})
	t.Logf("Degraded LeaderWorkerSetMissing %s after the CRD went: %s", took.Round(100*time.Millisecond), said)
	// No hot loop: the serving is written only as its groups go (the garbage collector deletes
	// their StatefulSets and pods now that their owner is gone), and the operator's log does not
	// run.
	writes := watchVersions(t, &v1.ModelServingList{}, ns, name, func(o client.Object) string { return o.GetResourceVersion() })
	logWas := logSize()
	time.Sleep(3 * time.Second)
	n := strings.Count(writes.String(), "->")
	grew := logSize() - logWas
	t.Logf("without the CRD, in 3 s: %d writes of the serving, %d bytes of operator log", n, grew)
	if n > 6 {
		violation(t, "the serving was written %d times in 3 s without the CRD: a hot loop", n)
	}
	if grew > 8<<10 {
		violation(t, "the operator logged %d bytes in 3 s without the CRD: a hot loop", grew)
	}
	// The serving can be deleted.
	fault(t, "delete the serving without the CRD")
	if err := kc.Delete(ctx, getServing(t, ns, name)); err != nil {
		t.Fatal(err)
	}
	gone := testenv.Eventually(t, 30*time.Second, "the serving gone without the CRD", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1.ModelServing{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("the serving deleted %s after its deletion, without the CRD", gone.Round(100*time.Millisecond))
	fault(t, "install the LeaderWorkerSet CRD again (the install's, applied as kubectl llm install applies it)")
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig, "apply", "--server-side", "--field-manager=kubectl-llm", "-f", crd).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	testenv.Eventually(t, 30*time.Second, "LeaderWorkerSet served again", func() (bool, error) {
		err := kc.List(ctx, &lwsv1.LeaderWorkerSetList{}, client.InNamespace(ns))
		return err == nil, err
	})
	installed = true
	reinstalled := time.Now()
	t.Logf("the CRD installed again (served) %s after it went", time.Since(deleting).Round(100*time.Millisecond))
	// A new serving runs: the operator's LeaderWorkerSet caches and the embedded LWS found the
	// CRD again.
	again := name + "-again"
	copies := watchForCopies(t, ns, again)
	if err := kc.Create(ctx, newServing(ns, again, 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, ns, again, 2, 2, copies, faultQuiet)
	t.Logf("a new serving Ready and quiet %s after the CRD was installed again", time.Since(reinstalled).Round(100*time.Millisecond))
	// What the deleted serving's groups left (their StatefulSets, whose owner went with the CRD)
	// is kube-controller-manager's garbage collector's to delete: it takes ~20 s more (its view
	// of which kinds exist is refreshed every 30 s), checked at the end of the test.
	lastChecks = append(lastChecks, struct {
		name  string
		check func(t *testing.T)
	}{"nothing left of the serving deleted without the LWS CRD", func(t *testing.T) { checkGone(t, ns, name) }})
}

// lwsCRDOfTheInstall writes the LeaderWorkerSet CRD document of the embedded install (what
// kubectl llm install --lws=embedded applies) to a file and returns its path.
func lwsCRDOfTheInstall(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sim.RepoRoot(), "config", "install", "embedded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.Contains(doc, "kind: CustomResourceDefinition") && strings.Contains(doc, "name: "+lwsCRD) {
			// Not under t.TempDir(): kubectl -f splits a path at its commas, as the test's name has.
			path := filepath.Join(filepath.Dir(op.logPath), "lws-crd.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("no %s CRD in config/install/embedded.yaml", lwsCRD)
	return ""
}

// logSize is the length of the operator's log so far.
func logSize() int64 {
	fi, err := os.Stat(op.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// versions records, from a watch, what of one object each of its versions shows (read), in
// order, a repeated value once.
type versions struct {
	mu   sync.Mutex
	seen []string
}

func watchVersions(t *testing.T, list client.ObjectList, ns, name string, read func(client.Object) string) *versions {
	t.Helper()
	v := &versions{}
	watchObject(t, list, ns, name, func(_ watch.EventType, o client.Object) {
		s := read(o)
		v.mu.Lock()
		if len(v.seen) == 0 || v.seen[len(v.seen)-1] != s {
			v.seen = append(v.seen, s)
		}
		v.mu.Unlock()
	})
	return v
}

// watchObject calls each with every event of one object (by name; in ns unless it is "") from
// a watch until the test ends.
func watchObject(t *testing.T, list client.ObjectList, ns, name string, each func(watch.EventType, client.Object)) {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ListOption{client.MatchingFields{"metadata.name": name}}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	w, err := wc.Watch(context.Background(), list, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok {
				each(ev.Type, o)
			}
		}
	}()
}

// flipped is a value that came back after another one replaced it ("" when none did).
func (v *versions) flipped() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	last := map[string]int{}
	for i, s := range v.seen {
		if j, ok := last[s]; ok && j != i-1 {
			return fmt.Sprintf("%q came back (%s)", s, strings.Join(v.seen, " -> "))
		}
		last[s] = i
	}
	return ""
}

// checkInvariantsAs checks the invariants of a serving of replicas groups of 2 with p as the
// operator, then that none of the watched values flipped (came back after another replaced it).
func checkInvariantsAs(t *testing.T, p *operatorProcess, ns, name string, replicas int, copies *copyWatch, watched map[string]*versions) {
	t.Helper()
	opWas := op
	op = p
	defer func() { op = opWas }()
	checkInvariants(t, ns, name, replicas, 2, copies, faultQuiet)
	for what, v := range watched {
		t.Logf("%s: %s", what, v)
		if f := v.flipped(); f != "" {
			violation(t, "%s flipped: %s", what, f)
		}
	}
}

// operatorAt runs the operator against kubeconfig (a proxy in front of the API server) until the
// test ends, then as before.
func operatorAt(t *testing.T, kubeconfig string) {
	t.Helper()
	operatorChanged(t, func(o *operatorProcess) { o.kubeconfig = kubeconfig }, op.kill)
	restartOperator(t)
}

// operatorChanged kills the operator and changes how it is started (its arguments, its
// kubeconfig) until the test ends; the caller starts it. At the test's end, end (op.kill, or
// op.stop where it must release its Lease) ends the changed one, and it is started again as it was.
func operatorChanged(t *testing.T, change func(o *operatorProcess), end func()) {
	t.Helper()
	op.kill()
	args, kubeconfig := op.args, op.kubeconfig
	t.Cleanup(func() {
		end()
		op.args, op.kubeconfig = args, kubeconfig
		restartOperator(t)
	})
	op.args = slices.Clone(op.args)
	change(op)
}

// withArgs is a change for operatorChanged: more command-line arguments.
func withArgs(extra ...string) func(o *operatorProcess) {
	return func(o *operatorProcess) { o.args = append(o.args, extra...) }
}

func (v *versions) String() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.seen, " -> ")
}

// leaderStoppedPastItsLease: two replicas with leader election (lease 4 s); the leader frozen
// (SIGSTOP) for longer than its lease. The other takes over within the lease (plus a retry), and
// rolls a new image made meanwhile. Resumed (SIGCONT) mid rollout, with its caches still holding
// the old spec, the old leader must not write: the LeaderWorkerSet's image and the webhook
// configurations' port never go back, and it exits (controller-runtime ends a process that lost
// its lease).
func leaderStoppedPastItsLease(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	lead, other := twoReplicas(t, "operator-stop-a.log", "operator-stop-b.log", shortLease)
	setLeader(lead)
	image := watchVersions(t, &lwsv1.LeaderWorkerSetList{}, ns, name, func(o client.Object) string {
		return o.(*lwsv1.LeaderWorkerSet).Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].Image
	})
	ports := watchVersions(t, &admissionv1.MutatingWebhookConfigurationList{}, "", webhookConfigName, func(o client.Object) string {
		m := o.(*admissionv1.MutatingWebhookConfiguration)
		if len(m.Webhooks) == 0 || m.Webhooks[0].ClientConfig.URL == nil {
			return "none"
		}
		return *m.Webhooks[0].ClientConfig.URL
	})
	svc := watchVersions(t, &corev1.ServiceList{}, ns, name+"-api", func(o client.Object) string { return o.GetResourceVersion() })
	fault(t, "SIGSTOP the leading replica (lease 4 s, renew deadline 3 s)")
	lead.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	waitTakeover(t, other, 4*time.Second, "the leader froze")
	// While the old leader is frozen, a new image: the new leader rolls it out.
	update(t, ns, name, newImage)
	underWay(t, ns, name, getServing(t, ns, name).Generation)
	if d := time.Since(stopped); d < 6*time.Second {
		time.Sleep(6*time.Second - d) // frozen on purpose, half as long again as its lease
	}
	fault(t, "SIGCONT the frozen replica mid rollout, its caches holding the old spec")
	lead.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	code, err := lead.waitExit(20 * time.Second)
	if err != nil {
		violation(t, "the resumed replica did not step down: %v", err)
	} else {
		log, _ := os.ReadFile(lead.logPath)
		t.Logf("the resumed replica exited %s after SIGCONT (status %d), %d writes refused by its fence: %s", time.Since(resumed).Round(100*time.Millisecond), code,
			strings.Count(string(log), "not written: this operator last renewed"), lastLine(string(log)))
	}
	checkInvariantsAs(t, other, ns, name, 2, copies, map[string]*versions{"the LeaderWorkerSet's image": image, "the webhook configuration's URL": ports})
	if n := strings.Count(svc.String(), "->"); n > 0 {
		violation(t, "the converged Service was written %d times: %s", n, svc)
	}
}

// oomKilledInALoop: a rolling update of 4 groups (3 s loading each) during which the operator is
// SIGKILLed 5 times, at random moments 0.3 to 1.5 s after it was ready again, and started again
// each time as a Deployment restarts an OOM-killed container. The rollout completes with one copy
// of each group.
func oomKilledInALoop(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewPCG(uint64(seed), 15))
	t.Logf("seed %d", seed)
	update(t, ns, name, newImage)
	underWay(t, ns, name, getServing(t, ns, name).Generation)
	for i := 1; i <= 5; i++ {
		time.Sleep(300*time.Millisecond + time.Duration(r.Int64N(int64(1200*time.Millisecond))))
		ms := getServing(t, ns, name)
		fault(t, fmt.Sprintf("SIGKILL the operator (%d of 5) with %d of 4 groups updated and %d ready, then start it again", i, ms.Status.UpdatedReplicas, ms.Status.ReadyReplicas))
		op.kill()
		restartOperator(t)
	}
	checkInvariants(t, ns, name, 4, 2, copies, faultQuiet)
}

// etcdStoppedPastTheRenewDeadline: the operator runs with leader election (renew deadline 3 s);
// etcd stops for 5 s mid rolling update, so the API server answers nothing that needs storage.
// The operator cannot renew its lease: it steps down and exits, and is started again as a
// Deployment would (or it kept running); the rollout then completes, no group twice.
func etcdStoppedPastTheRenewDeadline(t *testing.T, ns, name string) {
	ctx := context.Background()
	copies := watchForCopies(t, ns, name)
	// Ended by SIGTERM: it releases the Lease, which an operator without election respects.
	operatorChanged(t, withArgs(shortLease...), op.stop)
	restartOperator(t)
	update(t, ns, name, newImage)
	underWay(t, ns, name, getServing(t, ns, name).Generation)
	fault(t, "stop etcd for 5 s (the operator's renew deadline is 3 s) while groups are being replaced")
	stopped := time.Now()
	if err := cluster.RestartEtcd(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the API server ready again %s after etcd was stopped", time.Since(stopped).Round(100*time.Millisecond))
	if op.running() {
		t.Logf("the operator kept running through the etcd outage")
	} else {
		log, _ := os.ReadFile(op.logPath)
		t.Logf("the operator exited (status %d): %s; starting it again", op.exitCode(), lastLine(string(log)))
		restartOperator(t)
	}
	testenv.Eventually(t, settle, "the rollout done", func() (bool, error) {
		ms := getServing(t, ns, name)
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Phase == v1.PhaseReady, fmt.Errorf("%s %s", ms.Status.Phase, ms.Status.ReadyGroups)
	})
	t.Logf("the rollout done %s after etcd was stopped", time.Since(stopped).Round(100*time.Millisecond))
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}
