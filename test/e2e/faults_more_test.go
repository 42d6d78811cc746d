package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// seqCase is a fault case of TestFaultsMore that stops or replaces the shared operator (or
// throttles it): one at a time, each from a serving made Ready ahead in its own namespace.
type seqCase struct {
	name string
	// fresh: the case makes its serving itself (there is none before); shape adjusts the
	// serving made ahead otherwise.
	fresh bool
	shape func(ms *v1.ModelServing)
	run   func(t *testing.T, ns, name string)
}

// TestFaultsMore: the second slice of the fault suite. Two cases that leave the operator alone run
// side by side; the others, each about the operator process or what it depends on, one at a time.
func TestFaultsMore(t *testing.T) {
	seq := []seqCase{
		{name: "API server unreachable when the operator starts", fresh: true, run: apiServerUnreachableAtStart},
		{name: "webhook serving certificate expired on disk at start", run: func(t *testing.T, ns, name string) {
			badCertsAtStart(t, ns, name, "expired a month ago", "expires at", []string{"localhost", "127.0.0.1"}, time.Now().Add(-400*24*time.Hour))
		}},
		{name: "webhook serving certificate for other names on disk at start", run: func(t *testing.T, ns, name string) {
			badCertsAtStart(t, ns, name, "names only someone-else.example", "does not verify for localhost", []string{"someone-else.example"}, time.Now())
		}},
		{name: "operator down while LWS and LWS pods are created", run: downWhileLWSAndPodsAreCreated},
		{name: "operator down longer than the progress deadline while pods become ready", shape: func(ms *v1.ModelServing) {
			// A deadline well above one group's step (replaced, scheduled, loaded 3 s: ~5 s here,
			// more under CI's load: at 5 s the step after the operator came back passed it).
			ms.Spec.Rollout.ProgressDeadline = &metav1.Duration{Duration: 8 * time.Second}
			ms.Annotations[v1.AnnotationSimulatedLoadDelay] = "3s"
		}, run: downLongerThanTheProgressDeadline},
		{name: "two operator instances without leader election", run: twoInstancesWithoutElection},
		{name: "API priority and fairness throttling the operator (429s)", fresh: true, run: throttledBy429s},
	}
	starts := servingsAhead(t, "s", seq)
	t.Run("side by side", func(t *testing.T) {
		runConcurrently(t, "m", []childCase{
			{name: "a pod not ours carrying our labels (forged)", inject: forgedPodLabels},
			{name: "a poison ModelServing in another namespace", inject: poisonElsewhere},
		})
	})
	inTurn(t, "s", seq, starts)
}

// servingsAhead makes the servings of cases run one at a time now, all at once (they get Ready
// while something else runs), each in its own namespace, and returns the namespaces.
func servingsAhead(t *testing.T, prefix string, seq []seqCase) []string {
	t.Helper()
	starts := make([]string, len(seq))
	for i, c := range seq {
		ns := namespace(t)
		starts[i] = ns
		if c.fresh {
			continue
		}
		ms := newServing(ns, seqName(prefix, i), 2, 2, 1)
		if c.shape != nil {
			c.shape(ms)
		}
		if err := kc.Create(context.Background(), ms); err != nil {
			t.Fatal(err)
		}
	}
	return starts
}

// inTurn runs the cases one at a time, each from its serving made ahead (Ready first). A case
// that failed while the operator was down (killed on purpose) leaves it started again: the next
// case then fails only for its own reasons (CI once saw one failure become two this way).
func inTurn(t *testing.T, prefix string, seq []seqCase, starts []string) {
	for i, c := range seq {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { // registered first, so it runs after the case's own cleanups
				if t.Failed() && !op.running() {
					t.Log("the case failed with the operator down; starting it for the next case")
					restartOperator(t)
				}
			})
			ns, name := starts[i], seqName(prefix, i)
			countCase(t)
			if !c.fresh {
				waitReady(t, ns, name, settle)
			}
			c.run(t, ns, name)
		})
	}
}

func seqName(prefix string, i int) string { return prefix + string(rune('a'+i)) }

// forgedPodLabels: a pod nobody's controller made, carrying every label of the serving's group 0
// leader (but LWS's own set-name label, which would hand it to the LWS controllers) and Ready.
// It is not counted as a group or a copy of one, and it is not deleted.
func forgedPodLabels(t *testing.T, ns, name string) {
	ctx := context.Background()
	list := &corev1.PodList{}
	if err := kc.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name, lwsv1.GroupIndexLabelKey: "0", lwsv1.WorkerIndexLabelKey: "0"}); err != nil || len(list.Items) == 0 {
		t.Fatalf("the leader of group 0: %v (%d pods)", err, len(list.Items))
	}
	labels := map[string]string{}
	for k, v := range list.Items[0].Labels {
		if k != lwsv1.SetNameLabelKey {
			labels[k] = v
		}
	}
	// A third group too: a forged group index beyond the desired two.
	forged := []*corev1.Pod{forgedPod(ns, "forged-0", labels, "0"), forgedPod(ns, "forged-5", labels, "5")}
	fault(t, "create two pods of nobody's carrying the serving's labels (group 0 and group 5)")
	for _, p := range forged {
		if err := kc.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, settle, "the forged pods Ready", func() (bool, error) {
		for _, p := range forged {
			live := &corev1.Pod{}
			if err := kc.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil {
				return false, err
			}
			ready := false
			for _, c := range live.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if !ready {
				return false, nil
			}
		}
		return true, nil
	})
	// The status counts the serving's groups, not the forged pods: still 2 ready, 2 desired.
	testenv.Consistently(t, 3*time.Second, "the status to count only the serving's groups", func() error {
		ms := getServing(t, ns, name)
		if ms.Status.ReadyReplicas != 2 || ms.Status.Replicas != 2 {
			return fmt.Errorf("status counts %d ready of %d groups with the forged pods there", ms.Status.ReadyReplicas, ms.Status.Replicas)
		}
		return nil
	})
	t.Cleanup(func() {
		for _, p := range forged {
			live := &corev1.Pod{}
			if err := kc.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil || live.UID != p.UID || live.DeletionTimestamp != nil {
				violation(t, "the forged pod %s was deleted or replaced (%v)", p.Name, err)
			}
		}
	})
}

func forgedPod(ns, name string, labels map[string]string, group string) *corev1.Pod {
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	l[lwsv1.GroupIndexLabelKey] = group
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "forged", Image: "busybox"}},
		},
	}
}

// poisonElsewhere: a ModelServing the API server stores but no typed client decodes (issue 11's
// object), in another namespace, made after the serving was Ready. The serving is then changed
// (a new image) and must roll out and settle; the poison one is reported and not written again
// and again.
func poisonElsewhere(t *testing.T, ns, name string) {
	ctx := context.Background()
	other := namespace(t)
	fault(t, "create an undecodable ModelServing in namespace "+other)
	if err := kc.Create(ctx, poisonServing(other, "evil")); err != nil {
		t.Fatal(err)
	}
	update(t, ns, name, newImage)
	testenv.Eventually(t, settle, "the poison serving reported InvalidSpec", func() (bool, error) {
		c := meta.FindStatusCondition(getServing(t, other, "evil").Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Reason == v1.ReasonInvalidSpec, fmt.Errorf("%+v", c)
	})
	// Reported, it may be written once more (the detail of its report, which a pass that ends in
	// a terminal error writes at once); then it must go quiet: a window of faultQuiet with no
	// write, within 30 s and at most 3 writes after the report.
	rv, since, writes := getServing(t, other, "evil").ResourceVersion, time.Now(), 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if now := getServing(t, other, "evil").ResourceVersion; now != rv {
			rv, since, writes = now, time.Now(), writes+1
		}
		if time.Since(since) >= faultQuiet {
			break
		}
		if time.Now().After(deadline) {
			violation(t, "the poison serving is written again and again: %d writes in 30 s after its report, never %s without one", writes, faultQuiet)
			return
		}
	}
	if writes > 3 {
		violation(t, "the poison serving was written %d times after its report before it went quiet", writes)
	}
	t.Logf("the poison serving went quiet after %d more write(s)", writes)
}

// apiServerUnreachableAtStart: the operator is started against an address where no API server
// answers (as a pod is when the API server is away): it exits at once with a message naming the
// server. Once the address answers (a proxy to the API server starts there), the operator started
// again, as a Deployment would, makes the serving created meanwhile.
func apiServerUnreachableAtStart(t *testing.T, ns, name string) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigAt(t, "https://127.0.0.1:"+strconv.Itoa(port), nil)
	op.kill()
	defer func() {
		if !op.running() {
			restartOperator(t)
		}
	}()
	if err := kc.Create(context.Background(), newServing(ns, name, 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	fault(t, "start the operator against 127.0.0.1:"+strconv.Itoa(port)+", where nothing answers")
	away := &operatorProcess{logPath: filepath.Join(filepath.Dir(op.logPath), "operator-unreachable.log"), kubeconfig: kubeconfig}
	started := time.Now()
	if err := away.start(); err == nil {
		away.kill()
		violation(t, "the operator started with no API server to talk to")
		return
	}
	log, _ := os.ReadFile(away.logPath)
	t.Logf("the operator exited %s after its start (status %d): %s", time.Since(started).Round(100*time.Millisecond), away.exitCode(), lastLine(string(log)))
	if away.exitCode() == 0 || !strings.Contains(string(log), "127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(string(log), "cannot reach the API server") {
		violation(t, "the operator's exit does not say clearly which API server it cannot reach (status %d):\n%s", away.exitCode(), testenv.LastLines(string(log), 5))
	}
	// The API server "comes back" at that address; the operator is started again there, as a
	// Deployment would restart it.
	stop := proxyTo(t, port, strings.TrimPrefix(cluster.Config.Host, "https://"))
	t.Cleanup(stop) // after the operator is back at the cluster's own address (cleanups run last first)
	operatorAt(t, kubeconfig)
	checkInvariants(t, ns, name, 2, 2, watchForCopies(t, ns, name), faultQuiet)
}

// proxyTo forwards TCP connections from 127.0.0.1:port to target until the returned stop.
func proxyTo(t *testing.T, port int, target string) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return func() { _ = l.Close() }
}

// kubeconfigAt is the cluster's kubeconfig with its server at server (https://host:port) and,
// when caPEM is set, that server's CA instead of the cluster's (the same client credentials).
func kubeconfigAt(t *testing.T, server string, caPEM []byte) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
		if caPEM != nil {
			c.CertificateAuthority, c.CertificateAuthorityData = "", caPEM
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// badCertsAtStart: the operator starts with a webhook certificate directory whose certificate is
// unusable (expired, or for other names). It says why and makes new ones; the webhook
// configurations call it with a CA bundle that verifies, and admission works.
func badCertsAtStart(t *testing.T, ns, name, what, reason string, hosts []string, at time.Time) {
	copies := watchForCopies(t, ns, name)
	dir := t.TempDir()
	ca, crt, key, err := operator.SelfSignedCerts(hosts, at)
	if err != nil {
		t.Fatal(err)
	}
	for f, data := range map[string][]byte{"ca.crt": ca, "tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	operatorChanged(t, withArgs("--webhook-cert-dir", dir), op.kill)
	fault(t, "restart the operator with a webhook certificate that "+what)
	logWas, _ := os.ReadFile(op.logPath)
	restartOperator(t)
	log, _ := os.ReadFile(op.logPath)
	said := ""
	for _, line := range strings.Split(string(log[len(logWas):]), "\n") {
		if strings.Contains(line, "Making new webhook certificates") {
			said = line
		}
	}
	t.Logf("the operator said: %s", said)
	if !strings.Contains(said, reason) {
		violation(t, "the operator did not say why it made new certificates (want %q in its log)", reason)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "tls.crt")); string(now) == string(crt) {
		violation(t, "the unusable certificate was kept")
	}
	// The API server calls the webhooks with the new CA bundle: a LeaderWorkerSet is admitted.
	waitWebhooksCallOp(t)
	if out, err := createLWSDryRun(t, ns); err != nil {
		violation(t, "a LeaderWorkerSet through admission with the new certificates: %v: %s", err, out)
	}
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}

// waitWebhooksCallOp waits until the webhook configurations call the operator just started (it
// is ready once its webhook server serves, a moment before it has pointed them at itself).
func waitWebhooksCallOp(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the webhook configurations to call the operator", func() (bool, error) {
		err := webhooksCallTheLiveOperator(op)
		return err == nil, err
	})
}

// createLWSDryRun sends a LeaderWorkerSet through admission (kubectl create --dry-run=server: the
// webhooks are called, nothing is stored) and returns kubectl's output.
func createLWSDryRun(t *testing.T, ns string) (string, error) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "lws.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: hand-made, namespace: %s}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers: [{name: c, image: busybox}]
`, ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig, "create", "--dry-run=server", "-f", manifest).CombinedOutput()
	return string(out), err
}

// downWhileLWSAndPodsAreCreated: with the operator (and so the embedded LWS webhooks) down, a user
// creating a LeaderWorkerSet gets an error naming the webhook, and a pod of a group deleted then
// cannot be made again; once the operator is back both go through and the group is whole again.
func downWhileLWSAndPodsAreCreated(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	create := func() (string, error) { return createLWSDryRun(t, ns) }
	op.kill()
	defer func() {
		if !op.running() {
			restartOperator(t)
		}
	}()
	fault(t, "stop the operator; create a LeaderWorkerSet and delete a worker pod of group 1")
	out, err := create()
	t.Logf("kubectl create of a LeaderWorkerSet with the operator down: %s", strings.TrimSpace(out))
	if err == nil || !strings.Contains(out, "mleaderworkerset.kubectl-llm.dev") {
		violation(t, "creating a LeaderWorkerSet with the webhooks down: want an error naming the webhook, got %v: %s", err, out)
	}
	var worker string
	for _, p := range pods(t, ns, name) {
		if p.Group == 1 && p.Worker == 1 {
			worker = p.Name
		}
	}
	if err := kc.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: worker}}); err != nil {
		t.Fatal(err)
	}
	// The StatefulSet controller cannot make the pod again: its event names the webhook.
	testenv.Eventually(t, 30*time.Second, "the refused pod creation reported", func() (bool, error) {
		events := &corev1.EventList{}
		if err := kc.List(context.Background(), events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.Contains(e.Message, "mpod.kubectl-llm.dev") {
				t.Logf("event: %s", e.Message)
				return true, nil
			}
		}
		return false, nil
	})
	restartOperator(t)
	waitWebhooksCallOp(t)
	if out, err := create(); err != nil {
		violation(t, "creating a LeaderWorkerSet with the operator back: %v: %s", err, out)
	}
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
}

// downLongerThanTheProgressDeadline: a rollout (progress deadline 8 s, pods loading 3 s) loses its
// operator once new pods exist; it stays down 12 s while they become ready. Back, the operator
// reports the progress made: Progressing never turns ProgressDeadlineExceeded, and the rollout
// finishes.
func downLongerThanTheProgressDeadline(t *testing.T, ns, name string) {
	dumpOnFailure(t, ns, name)
	copies := watchForCopies(t, ns, name)
	before := getServing(t, ns, name).Status.UpdateRevision
	updated := time.Now()
	update(t, ns, name, newImage)
	// Every pod of a new group made, none of them ready yet: the embedded LWS is in the operator
	// and stops with it, so a kill between a group's leader and its worker StatefulSet would
	// leave nothing to become ready while it is down (CI caught that: nothing progressed, and
	// the deadline passing was then the right report). Nor may the worker StatefulSet still
	// name the old leader as its owner: the garbage collector then deletes it, the new worker
	// pod with it, and only LWS makes it again (seen here: a worker pod gone for 90 s).
	rev := updateRevision(t, ns, name, getServing(t, ns, name).Generation)
	if rev == before {
		t.Fatalf("the status names %s as the update revision of the new generation, the revision before the update", rev)
	}
	t.Logf("rolling out %s (from %s)", rev, before)
	// The group must also be at rest: both pods bound to nodes, none of the group's pods (the old
	// ones) still being deleted, and the same two pods on two looks 300 ms apart. A kill 0.8 s
	// after the update, while the group's replacement was still settling, once left the group
	// without pods for the whole outage (CI; nothing can make pods while the operator, which
	// serves the pod webhook, is down).
	group, lastSeen := -1, ""
	testenv.Eventually(t, settle, "every pod of a new group made and at rest", func() (bool, error) {
		g, seen, err := groupAtRest(t, ns, name, rev)
		if err != nil {
			lastSeen = ""
			return false, err
		}
		if seen != lastSeen {
			lastSeen = seen
			time.Sleep(300 * time.Millisecond)
			return false, fmt.Errorf("group %d at rest on one look (%s)", g, seen)
		}
		t.Logf("group %d: both pods made on the new revision and bound (%s), its worker StatefulSet owned by the new leader", g, seen)
		group = g
		return true, nil
	})
	fault(t, "SIGKILL the operator mid rollout; keep it down 12 s (progress deadline 8 s) and until the new pods are ready")
	op.kill()
	down := time.Now()
	time.Sleep(12 * time.Second) // down on purpose, longer than the deadline
	// The case is about progress made while the operator is away, so it comes back only once the
	// progress is there: on a loaded machine (CI) the sleep was not always enough for the scheduler and
	// the fake kubelet, and an operator that comes back to no progress past the deadline rightly
	// reports ProgressDeadlineExceeded.
	testenv.Eventually(t, settle, "the new group's pods ready while the operator is down", func() (bool, error) {
		ready, seen := 0, []string{}
		for _, p := range live(pods(t, ns, name)) {
			if p.Group == group && p.Revision == rev && p.Ready {
				ready++
			}
			seen = append(seen, fmt.Sprintf("%s %s ready=%v", p.Name, p.Revision, p.Ready))
		}
		return ready == 2, fmt.Errorf("group %d: %d of 2 new pods ready (%s)", group, ready, strings.Join(seen, ", "))
	})
	t.Logf("group %d ready %.1fs after the kill; restarting the operator", group, time.Since(down).Seconds())
	readyPods := map[string]types.UID{}
	for _, p := range live(pods(t, ns, name)) {
		if p.Group == group {
			readyPods[p.Name] = p.UID
		}
	}
	restartOperator(t)
	exceeded := ""
	testenv.Eventually(t, settle, "the rollout finished", func() (bool, error) {
		ms := getServing(t, ns, name)
		if c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing); c != nil && c.Reason == v1.ReasonProgressDeadlineExceeded && exceeded == "" {
			exceeded = c.Message
		}
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Phase == v1.PhaseReady, nil
	})
	if exceeded != "" {
		violation(t, "Progressing was ProgressDeadlineExceeded after the operator came back, though pods became ready: %s", exceeded)
	}
	// The pods that became ready while it was away are the ones serving: coming back recreates
	// nothing (on GPUs that is minutes of model loading per group).
	for _, p := range live(pods(t, ns, name)) {
		if uid, ok := readyPods[p.Name]; ok && uid != p.UID {
			violation(t, "%s, ready while the operator was down, was made again after it came back", p.Name)
		}
	}
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
	events := &corev1.EventList{}
	if err := kc.List(context.Background(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == v1.ReasonProgressDeadlineExceeded {
			at, cutoff := eventTime(e), updated
			if e.EventTime.IsZero() {
				cutoff = updated.Truncate(time.Second) // LastTimestamp has seconds only
			}
			if at.Before(cutoff) {
				// About the serving's first groups, made ahead while other cases ran (seen
				// when GPUs were still held by the namespaces of earlier cases).
				continue
			}
			violation(t, "a %s event %.1fs after the kill: %s", e.Reason, at.Sub(down).Seconds(), e.Message)
		}
	}
}

// groupAtRest finds a group whose pods are all on revision rev, bound to nodes and not being
// deleted, two of them, with its worker StatefulSet owned by its leader; seen names its pods.
func groupAtRest(t *testing.T, ns, name, rev string) (group int, seen string, err error) {
	t.Helper()
	byGroup := map[int][]podInfo{}
	for _, p := range pods(t, ns, name) {
		byGroup[p.Group] = append(byGroup[p.Group], p)
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		ps := byGroup[g]
		atRest := len(ps) == 2
		var names []string
		for _, p := range ps {
			atRest = atRest && p.Revision == rev && !p.Deleting && p.Node != ""
			names = append(names, fmt.Sprintf("%s %s on %s", p.Name, p.UID, p.Node))
		}
		if atRest && workersOwnedByLeader(t, ns, fmt.Sprintf("%s-%d", name, g)) {
			return g, strings.Join(names, ", "), nil
		}
	}
	return -1, "", fmt.Errorf("no group at rest on %s: %v", rev, byGroup)
}

// workersOwnedByLeader reports whether the group's worker StatefulSet (named after its leader
// pod) exists, is not being deleted, and is owned by the leader pod that exists now only.
func workersOwnedByLeader(t *testing.T, ns, leader string) bool {
	t.Helper()
	pod, sts := &corev1.Pod{}, &appsv1.StatefulSet{}
	if kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: leader}, pod) != nil ||
		kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: leader}, sts) != nil {
		return false
	}
	refs := sts.OwnerReferences
	return sts.DeletionTimestamp == nil && pod.DeletionTimestamp == nil && len(refs) == 1 && refs[0].UID == pod.UID
}

// webhookVersions are the resourceVersions of the two webhook configurations.
func webhookVersions(t *testing.T) string {
	t.Helper()
	m, v := &admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{}
	for _, o := range []client.Object{m, v} {
		if err := kc.Get(context.Background(), types.NamespacedName{Name: webhookConfigName}, o); err != nil {
			t.Fatal(err)
		}
	}
	return m.ResourceVersion + "/" + v.ResourceVersion
}

// twoInstancesWithoutElection: a second operator started beside the first, both without leader
// election (two `kubectl llm operator --leader-elect=false`, say one left running on a laptop).
// Decision: they do not fight. The webhook configurations keep calling the first, which serves
// them (no write for longer than the period at which the second looks whether the first is still
// there), the converged serving is not written, and
// a rollout made while both run finishes with one copy of each group.
func twoInstancesWithoutElection(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	second := &operatorProcess{logPath: filepath.Join(filepath.Dir(op.logPath), "operator-second.log")}
	before := webhookVersions(t)
	fault(t, "start a second operator instance, both without leader election")
	if err := second.start(); err != nil {
		t.Fatal(err)
	}
	defer second.stop()
	if err := quietFor(ns, name, 12*time.Second); err != nil {
		violation(t, "with two instances: %v", err)
	}
	if after := webhookVersions(t); after != before {
		violation(t, "the webhook configurations were written while both instances ran (resourceVersions %s -> %s)", before, after)
	}
	if err := webhooksCallTheLiveOperator(op); err != nil {
		violation(t, "the configurations moved off the first instance: %v", err)
	}
	update(t, ns, name, newImage)
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
	if !second.running() {
		violation(t, "the second instance exited with status %d; its last words:\n%s", second.exitCode(), second.lastWords())
	}
}

// throttledBy429s: the operator's requests throttled as API priority and fairness throttles a
// client whose priority level is full: every third request (but watches) answered 429 Too Many
// Requests with Retry-After: 1, by a proxy in front of the API server (the simulated cluster runs
// kube-apiserver without APF, kwokctl's --enable-priority-and-fairness=false). The operator,
// restarted there (its start lists everything at once), makes a new serving; once
// converged it is quiet (writes, and a bounded number of requests: no hot loop on the 429s).
func throttledBy429s(t *testing.T, ns, name string) {
	ctx := context.Background()
	p := newThrottlingProxy(t)
	fault(t, "throttle the operator: every third request answered 429 with Retry-After: 1")
	operatorAt(t, p.kubeconfig)
	copies := watchForCopies(t, ns, name)
	if err := kc.Create(ctx, newServing(ns, name, 2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, ns, name, 2, 2, copies, faultQuiet)
	before := p.requests.Load()
	time.Sleep(faultQuiet)
	n := p.requests.Load() - before
	t.Logf("%d requests answered 429; %d requests in %s once converged", p.rejected.Load(), n, faultQuiet)
	if p.rejected.Load() == 0 {
		violation(t, "no request was throttled: the case proves nothing")
	}
	if n > 50 {
		violation(t, "%d requests in %s while converged: the operator hot-loops", n, faultQuiet)
	}
}

// throttlingProxy is an HTTPS proxy to the API server that answers every third request but watches
// 429 with Retry-After: 1; kubeconfig is the cluster's, pointing at it.
type throttlingProxy struct {
	kubeconfig         string
	requests, rejected atomic.Int64
}

func newThrottlingProxy(t *testing.T) *throttlingProxy {
	t.Helper()
	p := &throttlingProxy{}
	p.kubeconfig = newAPIProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		n := p.requests.Add(1)
		if r.URL.Query().Get("watch") != "true" && n%3 == 0 {
			p.rejected.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
			return true
		}
		return false
	})
	return p
}

// newAPIProxy starts an HTTPS proxy to the API server and returns a kubeconfig, the cluster's,
// pointing at it. Each request is first given to intercept, which answers it itself when it
// returns true; the others are forwarded.
func newAPIProxy(t *testing.T, intercept func(w http.ResponseWriter, r *http.Request) bool) (kubeconfig string) {
	t.Helper()
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, Transport: transport, FlushInterval: -1}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			rp.ServeHTTP(w, r)
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return kubeconfigAt(t, srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}
