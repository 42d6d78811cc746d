package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// webhookPort is the port the mutating webhook configuration calls (0 when it cannot be read).
func webhookPort() int {
	m := &admissionv1.MutatingWebhookConfiguration{}
	if err := kc.Get(context.Background(), types.NamespacedName{Name: webhookConfigName}, m); err != nil || len(m.Webhooks) == 0 || m.Webhooks[0].ClientConfig.URL == nil {
		return 0
	}
	u, err := url.Parse(*m.Webhooks[0].ClientConfig.URL)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// The cases that touch what every serving depends on (the webhook configurations, the operator's
// election, the API server) run one at a time.
func TestFaultsControlPlane(t *testing.T) {
	ctx := context.Background()
	restartServing := func(t *testing.T, ns, name, id string) {
		update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Restart = &v1.RestartSpec{ID: id} })
	}
	t.Run("webhook configurations deleted by hand", func(t *testing.T) {
		ns := namespace(t)
		faultCase(t, ns, newServing(ns, "wa", 2, 2, 1))
		copies := watchForCopies(t, ns, "wa")
		fault(t, "delete both embedded LWS webhook configurations")
		for _, o := range []client.Object{&admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{}} {
			o.SetName(webhookConfigName)
			if err := kc.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		// The operator may only fill in the configurations the install ships (creating webhook
		// configurations cannot be bounded by name in RBAC, and would let it intercept any
		// admission in the cluster): it says so and what to run, and the install brings them back.
		testenv.Eventually(t, 30*time.Second, "the operator to say what to run", func() (bool, error) {
			log, err := os.ReadFile(op.logPath)
			return bytes.Contains(log, []byte("run it to recreate them")), err
		})
		if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
			t.Fatal(err)
		}
		took := testenv.Eventually(t, 60*time.Second, "the configurations back, calling the operator", func() (bool, error) {
			err := webhooksCallTheLiveOperator(leader())
			return err == nil, err
		})
		t.Logf("webhook configurations filled in %s after kubectl llm install shipped them again", took.Round(100*time.Millisecond))
		// Admission works again: a restart makes every pod anew through the pod webhook.
		restartServing(t, ns, "wa", "after-webhooks")
		checkInvariants(t, ns, "wa", 2, 2, copies, faultQuiet)
	})
	t.Run("webhook configuration edited by hand", func(t *testing.T) {
		ns := namespace(t)
		faultCase(t, ns, newServing(ns, "wb", 2, 2, 1))
		copies := watchForCopies(t, ns, "wb")
		fault(t, "point the mutating webhooks at another port with another CA bundle")
		testenv.Eventually(t, 10*time.Second, "hand edit", func() (bool, error) {
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := kc.Get(ctx, types.NamespacedName{Name: webhookConfigName}, m); err != nil {
				return false, err
			}
			for i := range m.Webhooks {
				u := "https://127.0.0.1:1/wrong"
				m.Webhooks[i].ClientConfig.URL = &u
				m.Webhooks[i].ClientConfig.CABundle = []byte("not a certificate")
				fail := admissionv1.Ignore
				m.Webhooks[i].FailurePolicy = &fail
			}
			err := kc.Update(ctx, m)
			return err == nil, err
		})
		took := testenv.Eventually(t, 60*time.Second, "the configuration restored", func() (bool, error) {
			err := webhooksCallTheLiveOperator(leader())
			return err == nil, err
		})
		t.Logf("webhook configuration restored %s after the edit", took.Round(100*time.Millisecond))
		restartServing(t, ns, "wb", "after-edit")
		checkInvariants(t, ns, "wb", 2, 2, copies, faultQuiet)
	})
	t.Run("two replicas with leader election: the leader SIGKILLed, then the Lease deleted by hand", func(t *testing.T) {
		ns := namespace(t)
		faultCase(t, ns, newServing(ns, "le", 2, 2, 1))
		copies := watchForCopies(t, ns, "le")
		lead, other := twoReplicas(t, "operator-a.log", "operator-b.log", []string{"--leader-elect=true"})
		lws := &lwsv1.LeaderWorkerSet{}
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "le"}, lws); err != nil {
			t.Fatal(err)
		}
		gen := lws.Generation
		fault(t, "SIGKILL the leading replica (its Lease is not released)")
		killed := time.Now()
		lead.kill()
		waitTakeover(t, other, 15*time.Second, "the leader was killed")
		// The killed replica comes back as a follower; the Lease is then deleted by hand.
		if err := lead.start(); err != nil {
			t.Fatal(err)
		}
		fault(t, "delete the leader election Lease by hand")
		if err := kc.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kubectl-llm-system", Name: "kubectl-llm-operator"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 60*time.Second, "a Lease again, held by a running replica", func() (bool, error) {
			l := &coordinationv1.Lease{}
			if err := kc.Get(ctx, types.NamespacedName{Namespace: "kubectl-llm-system", Name: "kubectl-llm-operator"}, l); err != nil {
				return false, err
			}
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
		})
		// Whoever leads now is the one the configurations call, and it must be alive. The replica
		// that led may go on for up to its renew deadline (10 s) before it sees that the other one
		// made the new Lease; only then does the new leader write its port. So a settled leader is
		// one the configurations have called, alive, for longer than the lease (15 s).
		var settledPort int
		var settledSince time.Time
		testenv.Eventually(t, 90*time.Second, "the configurations to call a live replica for 20 s", func() (bool, error) {
			port := webhookPort()
			var p *operatorProcess
			switch port {
			case lead.port:
				p = lead
			case other.port:
				p = other
			}
			if p == nil || !p.running() {
				settledPort = 0
				return false, nil
			}
			if port != settledPort {
				settledPort, settledSince = port, time.Now()
			}
			setLeader(p)
			return time.Since(settledSince) >= 20*time.Second, nil
		})
		t.Logf("%s from the kill to a settled leader", time.Since(killed).Round(100*time.Millisecond))
		// No write flipped the converged serving's LeaderWorkerSet: its spec never moved.
		if err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "le"}, lws); err != nil {
			t.Fatal(err)
		}
		if lws.Generation != gen {
			violation(t, "the LeaderWorkerSet's spec was written during the takeover: generation %d -> %d", gen, lws.Generation)
		}
		// The invariants, with the elected replica as the operator.
		opWas := op
		op = leader()
		defer func() { op = opWas }()
		checkInvariants(t, ns, "le", 2, 2, copies, faultQuiet)
	})
	for _, down := range []bool{false, true} {
		title := "namespace deleted with two servings in it, operator up"
		if down {
			title = "namespace deleted with two servings in it, operator down until it is Terminating"
		}
		t.Run(title, func(t *testing.T) {
			ns, err := newNamespace()
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"na", "nb"} {
				faultCase(t, ns, newServing(ns, name, 2, 2, 1))
			}
			if down {
				op.kill()
			}
			fault(t, "delete the namespace "+ns)
			if err := kc.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			if down {
				// The servings' finalizers hold the namespace until an operator finishes the job.
				time.Sleep(3 * time.Second)
				if err := kc.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); err != nil {
					violation(t, "the namespace went while the operator was down: %v", err)
				}
				restartOperator(t)
			}
			took := testenv.Eventually(t, settle, "the namespace gone", func() (bool, error) {
				err := kc.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
				return apierrors.IsNotFound(err), err
			})
			t.Logf("namespace gone %s after its deletion", took.Round(100*time.Millisecond))
			for _, name := range []string{"na", "nb"} {
				checkGone(t, ns, name)
			}
		})
	}
	t.Run("kube-apiserver restarted mid rolling update, rollout status, get -w and watch watching", func(t *testing.T) {
		ns := namespace(t)
		faultCase(t, ns, newServing(ns, "ap", 2, 2, 1))
		copies := watchForCopies(t, ns, "ap")
		update(t, ns, "ap", newImage)
		underWay(t, ns, "ap", getServing(t, ns, "ap").Generation)
		out, done := startCLI(t, "rollout", "status", "ap", "-n", ns, "--timeout", "150s")
		// kubectl llm get -w too, which prints a line for every change of the serving.
		watched, watchDone := startCLI(t, "get", "-w", "-n", ns)
		// And the live view's plain lines (kubectl llm watch --no-tui), whose watches are pkg/tui's.
		viewed, viewDone := startCLI(t, "watch", "ap", "--no-tui", "-n", ns)
		// The fault comes once all three have listed the serving (their first line): an API
		// server that is away before the first list is a different case, a clear error at once.
		testenv.Eventually(t, 30*time.Second, "rollout status's, get -w's and watch's first lines", func() (bool, error) {
			return strings.Contains(out.String(), "\n") && strings.Count(watched.String(), "\n") >= 2 && // get: header and row
				strings.Contains(viewed.String(), "serving ap: "), nil
		})
		fault(t, "restart kube-apiserver (down 1 s) while groups are being replaced and rollout status, get -w and watch --no-tui watch")
		if err := cluster.RestartAPIServer(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				violation(t, "kubectl llm rollout status did not survive the API server restart: %v\n%s", err, out.String())
			} else {
				t.Logf("rollout status: %s", lastLine(out.String()))
			}
		case <-time.After(3 * settle):
			violation(t, "kubectl llm rollout status still waiting after %s:\n%s", 3*settle, out.String())
		}
		checkInvariants(t, ns, "ap", 2, 2, copies, faultQuiet)
		// A change after the restart reaches get -w and watch, still running: a pause, which
		// get -w prints as a new version of the serving and the view's serving line shows.
		lines := strings.Count(watched.String(), "\n")
		viewedBefore := len(viewed.String())
		if out, err := kubectlLLM("rollout", "pause", "ap", "-n", ns); err != nil {
			t.Fatalf("kubectl llm rollout pause: %v\n%s", err, out)
		}
		select {
		case err := <-watchDone:
			violation(t, "kubectl llm get -w exited across the API server restart (%v):\n%s", err, watched.String())
		case <-time.After(0):
			testenv.Eventually(t, 30*time.Second, "get -w to print the change made after the restart", func() (bool, error) {
				return strings.Count(watched.String(), "\n") > lines, fmt.Errorf("get -w printed:\n%s", watched.String())
			})
			t.Logf("get -w, after the restart and a change: %s", lastLine(watched.String()))
		}
		select {
		case err := <-viewDone:
			violation(t, "kubectl llm watch --no-tui exited across the API server restart (%v):\n%s", err, viewed.String())
		case <-time.After(0):
			testenv.Eventually(t, 30*time.Second, "watch --no-tui to print the change made after the restart", func() (bool, error) {
				return strings.Contains(viewed.String()[viewedBefore:], ", paused"), fmt.Errorf("watch --no-tui printed:\n%s", viewed.String())
			})
			t.Logf("watch --no-tui, after the restart and a change: %s", lastLine(viewed.String()))
		}
	})
}

// startCLI starts kubectl llm with args against the simulated cluster; its output goes to out,
// its exit to done. It is killed when the test ends.
func startCLI(t *testing.T, args ...string) (out *testenv.SyncBuffer, done <-chan error) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...)
	out = &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return out, exited
}

// twoReplicas replaces the operator by two replicas with leader election (args), logging to the
// files named, and returns the one that leads (the one the webhook configurations call: only the
// leader writes them) and the other. When the test ends both are stopped and the operator started
// again.
func twoReplicas(t *testing.T, logA, logB string, args []string) (lead, other *operatorProcess) {
	t.Helper()
	reps := electionReplicas(t, args, logA, logB)
	a, b := reps[0], reps[1]
	for _, p := range reps {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 60*time.Second, "a leader", func() (bool, error) {
		switch webhookPort() {
		case a.port:
			lead, other = a, b
		case b.port:
			lead, other = b, a
		}
		return lead != nil, nil
	})
	return lead, other
}

// electionReplicas stops the operator and returns replicas with args, one per log file, not
// started. When the test ends the running ones are stopped (SIGTERM) and the operator started
// again.
func electionReplicas(t *testing.T, args []string, logs ...string) []*operatorProcess {
	t.Helper()
	op.kill()
	dir := filepath.Dir(op.logPath)
	var reps []*operatorProcess
	for _, l := range logs {
		reps = append(reps, &operatorProcess{logPath: filepath.Join(dir, l), args: args})
	}
	t.Cleanup(func() {
		for _, p := range reps {
			if p.running() {
				began := time.Now()
				p.stop()
				t.Logf("%s stopped (SIGTERM) in %s", filepath.Base(p.logPath), time.Since(began).Round(100*time.Millisecond))
			}
		}
		setLeader(nil)
		restartOperator(t)
		// Ready comes a moment before the restarted operator points the webhook configurations
		// at itself (the replicas' port is in them until then): the next case must not start, or
		// check, in between.
		testenv.Eventually(t, 30*time.Second, "the webhook configurations to call the restarted operator", func() (bool, error) {
			return webhookPort() == op.port, nil
		})
	})
	return reps
}

// waitTakeover waits until the webhook configurations call other (it leads), failing the case
// when that takes more than twice the lease, and makes it the leader the invariants check.
func waitTakeover(t *testing.T, other *operatorProcess, lease time.Duration, after string) {
	t.Helper()
	took := testenv.Eventually(t, 4*lease, "the other replica to take over", func() (bool, error) {
		return webhookPort() == other.port, nil
	})
	t.Logf("the other replica took over %s after %s (lease duration %s)", took.Round(100*time.Millisecond), after, lease)
	if took > 2*lease {
		violation(t, "takeover took %s, more than twice the %s lease", took, lease)
	}
	setLeader(other)
}

func setLeader(p *operatorProcess) {
	leaderProcess.Lock()
	leaderProcess.p = p
	leaderProcess.Unlock()
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
