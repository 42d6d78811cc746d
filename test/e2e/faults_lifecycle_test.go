package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// TestFaultsLifecycle: the operator's own lifecycle around a running cluster: its Deployment
// rolled, a second copy started from a laptop, and a cluster full of unrelated objects. One at a
// time, each from a serving made Ready ahead.
func TestFaultsLifecycle(t *testing.T) {
	seq := []seqCase{
		{name: "rolling update of the operator Deployment (maxSurge: the new replica first, then SIGTERM the old)", run: operatorRollingUpdate},
		{name: "an in-cluster operator and one started from a laptop with its defaults", run: inClusterAndLaptop},
		{name: "hostile neighbours: thousands of unrelated objects in other namespaces", run: hostileNeighbours},
		{name: "neighbours carrying our labels and LWS's in other namespaces (no serving made them)", run: labelledNeighbours},
	}
	inTurn(t, "l", seq, servingsAhead(t, "l", seq))
}

// The election timing of these cases is the default (the Deployment's): a lease of 15 s.
const defaultLease = 15 * time.Second

// leaseKey is the operator's leader election Lease (the install's namespace).
var leaseKey = client.ObjectKey{Namespace: "kubectl-llm-system", Name: "kubectl-llm-operator"}

// watchLeaseHolder records the holders of the operator's Lease, in order ("" while it is free).
func watchLeaseHolder(t *testing.T) *versions {
	return watchVersions(t, &coordinationv1.LeaseList{}, leaseKey.Namespace, leaseKey.Name, func(o client.Object) string {
		return ptr.Deref(o.(*coordinationv1.Lease).Spec.HolderIdentity, "")
	})
}

// watchWebhookURL records the URLs the mutating webhook configuration calls, in order.
func watchWebhookURL(t *testing.T) *versions {
	return watchVersions(t, &admissionv1.MutatingWebhookConfigurationList{}, "", webhookConfigName, func(o client.Object) string {
		m := o.(*admissionv1.MutatingWebhookConfiguration)
		if len(m.Webhooks) == 0 || m.Webhooks[0].ClientConfig.URL == nil {
			return "none"
		}
		return *m.Webhooks[0].ClientConfig.URL
	})
}

// acquired reports whether the replica's log says it took the Lease.
func acquired(p *operatorProcess) bool {
	log, _ := os.ReadFile(p.logPath)
	return strings.Contains(string(log), "successfully acquired lease")
}

// startLeading starts p and waits until it leads: the webhook configurations call it.
func startLeading(t *testing.T, p *operatorProcess) {
	t.Helper()
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the first replica to lead", func() (bool, error) {
		return webhookPort() == p.port, nil
	})
	setLeader(p)
}

// operatorRollingUpdate: the operator Deployment rolled as a Deployment with maxSurge does it,
// here with processes: the new replica is started (same flags, leader election with the default
// timing) and is ready, waiting for the Lease; then the old one gets SIGTERM, as the kubelet sends
// it. The old one releases the Lease as it exits, so the new one takes over within its retry
// period (2 s), not the 15 s lease; the webhook configurations move to it; an LWS admission every
// 100 ms meanwhile is never refused; a rollout started just before finishes, one copy per group.
func operatorRollingUpdate(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	reps := electionReplicas(t, []string{"--leader-elect=true"}, "operator-roll-old.log", "operator-roll-new.log")
	old, next := reps[0], reps[1]
	startLeading(t, old)
	holders := watchLeaseHolder(t)
	urls := watchWebhookURL(t)
	if err := next.start(); err != nil { // the surge replica: ready, waiting for the Lease
		t.Fatal(err)
	}
	if acquired(next) {
		t.Fatal("the new replica took the Lease while the old one held it")
	}
	update(t, ns, name, newImage)
	underWay(t, ns, name, getServing(t, ns, name).Generation)
	probe := testenv.ProbeAdmission(kc, ns, "vllm/vllm-openai:probe", 100*time.Millisecond)
	time.Sleep(2 * time.Second) // admissions before the handover too
	fault(t, "SIGTERM the old replica (the new one ready, waiting for the Lease) mid rolling update")
	old.signal(t, syscall.SIGTERM)
	stopped := time.Now()
	took := testenv.Eventually(t, 2*defaultLease, "the new replica to lead", func() (bool, error) {
		return webhookPort() == next.port, nil
	})
	setLeader(next)
	t.Logf("the new replica leads (webhook configurations call it) %s after the old one's SIGTERM (lease %s)", took.Round(10*time.Millisecond), defaultLease)
	if took > defaultLease/3 {
		violation(t, "the takeover took %s, not well under the %s lease: the old replica did not release the Lease", took, defaultLease)
	}
	code, err := old.waitExit(30 * time.Second)
	if err != nil {
		violation(t, "the old replica did not exit after SIGTERM: %v", err)
	} else {
		t.Logf("the old replica exited (status %d) %s after SIGTERM", code, time.Since(stopped).Round(10*time.Millisecond))
	}
	time.Sleep(3 * time.Second) // admissions after the handover too
	checkAdmissionKept(t, probe.Stop(), "the handover")
	checkInvariantsAs(t, next, ns, name, 2, copies, map[string]*versions{"the Lease's holder": holders, "the webhook configuration's URL": urls})
}

// checkAdmissionKept: the LWS admissions probed through a handover were all let in, and there
// were enough of them to show it.
func checkAdmissionKept(t *testing.T, r testenv.AdmissionResult, during string) {
	t.Helper()
	t.Logf("admission during %s: %s; longest refusing stretch %s", during, r, r.LongestFailingStretch.Round(10*time.Millisecond))
	if r.Tries < 20 {
		violation(t, "only %d admissions during %s: the case proves nothing", r.Tries, during)
	}
	if r.Failures > 0 {
		violation(t, "%d of %d LWS admissions refused during %s, over %s: %v", r.Failures, r.Tries, during, r.Gap(), r.First)
	}
}

// inClusterAndLaptop: the in-cluster operator (its ServiceAccount, leader election as the
// Deployment runs it) and a second `kubectl llm operator` started as from a laptop, with the
// admin kubeconfig and the command's defaults. The laptop's defaults elect on the install's Lease
// (kubectl-llm-system/kubectl-llm-operator, the namespace an in-cluster operator's pod is in), so
// it stands by and says who leads; with --leader-elect=false it refuses to start while another
// operator holds the Lease. Never two leaders: the Lease and the webhook configurations go to the
// laptop once, when the in-cluster operator stops; servings converge throughout.
func inClusterAndLaptop(t *testing.T, ns, name string) {
	copies := watchForCopies(t, ns, name)
	reps := electionReplicas(t, []string{"--leader-elect=true"}, "operator-incluster.log", "operator-laptop.log")
	inCluster, laptop := reps[0], reps[1]
	laptop.laptop, laptop.args = true, nil
	startLeading(t, inCluster)
	holders := watchLeaseHolder(t)
	urls := watchWebhookURL(t)

	// The laptop without election: refused while another operator leads.
	fault(t, "start kubectl llm operator --leader-elect=false from a laptop while the in-cluster operator leads")
	refused := &operatorProcess{logPath: laptop.logPath + ".no-election", laptop: true, args: []string{"--leader-elect=false"}}
	if err := refused.start(); err == nil {
		refused.kill()
		violation(t, "an operator with --leader-elect=false started beside the leading one")
	} else {
		log, _ := os.ReadFile(refused.logPath)
		t.Logf("refused (status %d): %s", refused.exitCode(), lastLine(string(log)))
		if refused.exitCode() != 1 || !strings.Contains(string(log), "holds the Lease "+leaseKey.String()) {
			violation(t, "the refusal does not say which Lease is held: %v: %s", err, log)
		}
	}

	// The laptop with its defaults: it stands by.
	fault(t, "start kubectl llm operator from a laptop (admin kubeconfig, defaults) while the in-cluster operator leads")
	if err := laptop.start(); err != nil {
		t.Fatal(err)
	}
	update(t, ns, name, newImage) // a rollout while both run: the leader does it
	waitReady(t, ns, name, settle)
	log, _ := os.ReadFile(laptop.logPath)
	if acquired(laptop) || webhookPort() != inCluster.port {
		violation(t, "the laptop operator took over while the in-cluster one leads (Lease holders %s)", holders)
	}
	if !strings.Contains(string(log), "Another operator holds the Lease") {
		violation(t, "the laptop operator does not say that another one leads:\n%s", testenv.LastLines(string(log), 10))
	}

	// The in-cluster operator goes (scaled to 0, say): the laptop takes over, and LWS admission
	// (probed every 100 ms) is never refused meanwhile.
	probe := testenv.ProbeAdmission(kc, ns, "vllm/vllm-openai:probe", 100*time.Millisecond)
	time.Sleep(2 * time.Second) // admissions before the handover too
	fault(t, "SIGTERM the in-cluster operator")
	inCluster.signal(t, syscall.SIGTERM)
	took := testenv.Eventually(t, 2*defaultLease, "the laptop operator to lead", func() (bool, error) {
		return webhookPort() == laptop.port, nil
	})
	t.Logf("the laptop operator leads %s after the in-cluster one's SIGTERM", took.Round(10*time.Millisecond))
	setLeader(laptop)
	if _, err := inCluster.waitExit(30 * time.Second); err != nil {
		violation(t, "the in-cluster operator did not exit: %v", err)
	}
	time.Sleep(3 * time.Second) // admissions after the handover too
	checkAdmissionKept(t, probe.Stop(), "the in-cluster -> laptop handover")
	update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To[int32](3) })
	checkInvariantsAs(t, laptop, ns, name, 3, copies, map[string]*versions{"the Lease's holder": holders, "the webhook configuration's URL": urls})
	if n := strings.Count(urls.String(), "->"); n != 1 {
		violation(t, "the webhook configurations moved %d times, want once (in-cluster -> laptop): %s", n, urls)
	}
}
