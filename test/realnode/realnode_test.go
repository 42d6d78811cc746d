// Package realnode tests the operator where it really runs: in pods on a real node (containerd
// and kubelet), installed by `kubectl llm install --lws=embedded` from a locally built image,
// with engine pods of fake-engine probed by the kubelet. The cluster is hack/realnode.sh's; the
// tests run inside its network namespace:
//
//	make test-realnode     # up, these tests, down
//	hack/realnode.sh run $(go test -c -o /tmp/realnode.test ./test/realnode && echo /tmp/realnode.test) -test.v
//
// Without that cluster the tests fail, unless REALNODE=skip says to skip them (make test sets
// it: the tier has its own target); -short skips them too.
package realnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

const (
	operatorNS    = "kubectl-llm-system"
	operatorName  = "kubectl-llm-operator"
	fakeEngine    = "localhost/fake-engine:dev"
	operatorImage = "localhost/kubectl-llm:dev"
)

// cluster is what the tests share: a client of the real-node cluster and where its state is.
var cluster struct {
	c   client.Client
	ns  string // the network namespace
	dir string // hack/realnode.sh's state directory
}

func TestMain(m *testing.M) {
	flag.Parse() // for testing.Short
	cluster.ns, cluster.dir = os.Getenv("REALNODE_NS"), os.Getenv("REALNODE_DIR")
	if testing.Short() || cluster.ns == "" || cluster.dir == "" || os.Getenv("KUBECONFIG") == "" {
		if testing.Short() || os.Getenv("REALNODE") == "skip" {
			// The pure tests still run (and report), as under -short in the other cluster tiers.
			fmt.Println("realnode: no cluster (-short or REALNODE=skip): only the TestPure… tests run")
			if err := flag.Set("test.run", "^TestPure"); err != nil {
				panic(err)
			}
			os.Exit(m.Run())
		}
		fmt.Fprintln(os.Stderr, "realnode: not inside the real-node cluster (REALNODE_NS, REALNODE_DIR, KUBECONFIG unset): "+
			"run `make test-realnode`, or these tests through `hack/realnode.sh run`; REALNODE=skip skips them")
		os.Exit(1)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		os.Exit(1)
	}
	scheme := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	cluster.c, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

// fakeServing is a ModelServing of fake-engine pods (engine type custom: the image's entrypoint
// gets spec.engine.args) on the CPU-only node.
func fakeServing(name, ns string, replicas, groupSize int32, args ...string) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ModelServingSpec{
			Model:     "Qwen/Qwen3-0.6B",
			Engine:    v1.EngineSpec{Type: v1.EngineCustom, Image: fakeEngine, Args: args},
			Replicas:  ptr.To(replicas),
			GroupSize: groupSize,
			Readiness: v1.ReadinessSpec{StartupTimeout: &metav1.Duration{Duration: 2 * time.Minute}},
		},
	}
}

// namespace makes a namespace for one test and deletes it (and so its servings) afterwards.
func namespace(t *testing.T, prefix string) string {
	ns := testenv.Namespace(t, cluster.c, prefix)
	t.Cleanup(func() {
		_ = cluster.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns
}

// waitReady waits up to 2 minutes for the serving's phase to be Ready.
func waitReady(t *testing.T, ms *v1.ModelServing, what string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, what, func() (bool, error) {
		var got v1.ModelServing
		if err := cluster.c.Get(ctx(t), client.ObjectKeyFromObject(ms), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == v1.PhaseReady, fmt.Errorf("phase %q", got.Status.Phase)
	})
}

func pods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := cluster.c.List(ctx(t), &list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func podReady(p corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

func isLeader(p corev1.Pod) bool { return p.Labels[lwsv1.WorkerIndexLabelKey] == "0" }

// kubectlLLM runs the kubectl-llm binary hack/realnode.sh built (first on PATH), as a script does.
func kubectlLLM(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx(t), "kubectl-llm", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl-llm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func httpGet(url string) (int, string, error) {
	cl := http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// The network namespace is the containment: no default route, no gateway, no device but lo and
// the pod bridge, and a connection to a public address fails at once, not after a timeout.
func TestNamespaceHasNoRouteOut(t *testing.T) {
	var self, want syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &self); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join("/run/netns", cluster.ns), &want); err != nil {
		t.Fatal(err)
	}
	if self.Ino != want.Ino {
		t.Fatalf("the test runs in network namespace inode %d, not in %s (inode %d): its checks would say nothing of the cluster", self.Ino, cluster.ns, want.Ino)
	}
	links, err := exec.Command("ip", "-o", "link").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	var routes []byte
	for _, family := range []string{"-4", "-6"} {
		out, err := exec.Command("ip", family, "route", "show", "table", "all").CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s route: %v\n%s", family, err, out)
		}
		routes = append(routes, out...)
	}
	for _, problem := range waysOut(string(links), string(routes)) {
		t.Error(problem)
	}
	for _, addr := range []string{"1.1.1.1:443", "8.8.8.8:53", "[2606:4700:4700::1111]:443"} {
		start := time.Now()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		took := time.Since(start)
		if err == nil {
			conn.Close()
			t.Errorf("connected to %s from inside the namespace", addr)
			continue
		}
		if !errors.Is(err, syscall.ENETUNREACH) || took > time.Second {
			t.Errorf("connect %s: %v after %s, want network unreachable at once", addr, err, took)
		}
	}
	// Pods resolve through 127.0.0.1 (their own loopback), and the node's resolver has no
	// route either: a lookup fails without leaving.
	r := &net.Resolver{PreferGo: true}
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if addrs, err := r.LookupHost(lctx, "example.com"); err == nil {
		t.Errorf("example.com resolved to %v from inside the namespace", addrs)
	}
	resolv, err := os.ReadFile(filepath.Join(cluster.dir, "pod-resolv.conf"))
	if err != nil || strings.TrimSpace(string(resolv)) != "nameserver 127.0.0.1" {
		t.Errorf("pod resolv.conf = %q (%v), want only nameserver 127.0.0.1", resolv, err)
	}
}

// waysOut reads `ip -o link` and `ip route show table all` of the namespace and says what could
// carry traffic off the machine: a link other than lo, the bridge rn0 and the host ends of the
// pods' veth pairs (enslaved to rn0); a default route or one through a gateway; a route through
// any other device.
func waysOut(links, routes string) []string {
	var problems []string
	devs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(links), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) < 3 {
			problems = append(problems, fmt.Sprintf("unreadable link line %q", line))
			continue
		}
		name := strings.SplitN(strings.TrimSpace(f[1]), "@", 2)[0]
		switch {
		case name == "lo" || name == "rn0":
			devs[name] = true
		case strings.HasPrefix(name, "veth") && strings.Contains(line, " master rn0 "):
			devs[name] = true
		default:
			problems = append(problems, fmt.Sprintf("unexpected link in the namespace: %q", line))
		}
	}
	if !devs["rn0"] {
		problems = append(problems, "no pod bridge rn0: not the real-node namespace")
	}
	for _, line := range strings.Split(strings.TrimSpace(routes), "\n") {
		if strings.HasPrefix(line, "default") || strings.Contains(line, " via ") {
			problems = append(problems, fmt.Sprintf("a way out: %q", line))
		}
		if i := strings.Index(line, " dev "); i >= 0 {
			if dev := strings.Fields(line[i+5:])[0]; !devs[dev] {
				problems = append(problems, fmt.Sprintf("a route through %s: %q", dev, line))
			}
		}
	}
	return problems
}

// TestPureWaysOut: the containment check above finds what it is there to find.
func TestPureWaysOut(t *testing.T) {
	links := "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n" +
		"2: rn0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 6a:1f brd ff:ff\n" +
		"5: veth1561803d@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue master rn0 state UP mode DEFAULT group default\\    link/ether 66:71\n"
	routes := "10.244.0.0/24 dev rn0 proto kernel scope link src 10.244.0.1\n" +
		"local 10.96.0.1 dev lo table local proto kernel scope host src 10.96.0.1\n" +
		"local fe80::6471:e4ff:fe35:42a4 dev veth1561803d table local proto kernel metric 0 pref medium\n"
	if p := waysOut(links, routes); len(p) != 0 {
		t.Fatalf("the real-node namespace's own links and routes flagged: %v", p)
	}
	for name, c := range map[string]struct{ links, routes string }{
		"a default route":            {links, routes + "default dev rn0 scope link\n"},
		"a gateway":                  {links, routes + "1.1.1.0/24 via 10.244.0.9 dev rn0\n"},
		"a veth to the host":         {links + "7: eth0@if8: <BROADCAST,UP> mtu 1500 state UP\\    link/ether 1\n", routes},
		"a veth not on rn0":          {links + "9: vethabc@if2: <BROADCAST,UP> mtu 1500 state UP\\    link/ether 1\n", routes},
		"a route through a stranger": {links, routes + "192.168.0.0/16 dev wg0 scope link\n"},
		"not the namespace at all":   {"1: lo: <LOOPBACK,UP> mtu 65536\n", "local 127.0.0.1 dev lo table local\n"},
	} {
		if p := waysOut(c.links, c.routes); len(p) == 0 {
			t.Errorf("%s: not flagged", name)
		}
	}
}

func TestPureRootMountReadOnly(t *testing.T) {
	ro := "2190 2170 0:310 / / ro,relatime master:1 - overlay overlay rw,lowerdir=/l\n2191 2190 0:312 / /proc rw,nosuid - proc proc rw\n"
	rw := "2190 2170 0:310 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/l\n2191 2190 0:312 / /tmp ro - tmpfs tmpfs ro\n"
	if !rootMountReadOnly(ro) || rootMountReadOnly(rw) || rootMountReadOnly("") {
		t.Fatal("rootMountReadOnly misreads mountinfo")
	}
}

// The operator runs as the install shipped it: two replicas of the local image, non-root, with
// a read-only root filesystem (in the spec, and in the process the runtime started), Available
// through its own probes, one of them the leader.
func TestOperatorRunsAsInstalled(t *testing.T) {
	var list corev1.PodList
	if err := cluster.c.List(ctx(t), &list, client.InNamespace(operatorNS), client.MatchingLabels{"app.kubernetes.io/component": "operator"}); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, p := range list.Items {
		if ok, _ := podReady(p); ok {
			ready++
		}
		c := p.Spec.Containers[0]
		if c.Image != operatorImage {
			t.Errorf("pod %s runs %s, want %s", p.Name, c.Image, operatorImage)
		}
		if c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
			t.Errorf("pod %s: root filesystem not read-only", p.Name)
		}
		if p.Spec.SecurityContext == nil || ptr.Deref(p.Spec.SecurityContext.RunAsUser, 0) == 0 {
			t.Errorf("pod %s runs as root", p.Name)
		}
		// And the process itself, as the runtime started it: its user, its root mount.
		pid := taskPID(t, strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"))
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(st), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == "Uid:" && (f[1] != "65532" || f[2] != "65532") {
				t.Errorf("pod %s: the operator process runs as %s, want 65532", p.Name, line)
			}
		}
		mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if err != nil {
			t.Fatal(err)
		}
		if !rootMountReadOnly(string(mi)) {
			t.Errorf("pod %s: the operator's / is writable", p.Name)
		}
	}
	if ready != 2 {
		t.Fatalf("%d of %d operator pods Ready, want 2", ready, len(list.Items))
	}
	if id := leaseIdentity(t); !strings.HasPrefix(id, operatorName+"-") {
		t.Fatalf("lease holder %q is not an operator pod", id)
	}
}

// taskPID is the host PID of a running container, from containerd.
func taskPID(t *testing.T, id string) int {
	t.Helper()
	out, err := exec.Command("ctr", "--address", filepath.Join(cluster.dir, "containerd", "containerd.sock"), "-n", "k8s.io",
		"tasks", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr tasks ls: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == id && f[2] == "RUNNING" {
			var pid int
			if _, err := fmt.Sscan(f[1], &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no running task %s in:\n%s", id, out)
	return 0
}

// rootMountReadOnly reads /proc/PID/mountinfo: is the mount at / read-only?
func rootMountReadOnly(mountinfo string) bool {
	for _, line := range strings.Split(mountinfo, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS …
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/" {
			return slices.Contains(strings.Split(f[5], ","), "ro")
		}
	}
	return false
}

// Two groups of a leader and a worker of fake-engine: the pods start, stay not Ready while the
// engine "loads weights" (its /health fails), and become Ready through the startup and
// readiness probes the operator generates; the serving then reports Ready and its leaders
// answer /v1/models and /metrics at the port those probes use.
func TestTwoGroupsOfTwoBecomeReadyThroughRealProbes(t *testing.T) {
	const delay = 8 * time.Second
	ns := namespace(t, "rn-ready-")
	ms := fakeServing("fake", ns, 2, 2, "--load-delay="+delay.String())
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	sawLoading, sawNotStarted := false, false
	took := testenv.Eventually(t, 2*time.Minute, "2 groups × 2 pods Ready", func() (bool, error) {
		ps := pods(t, ns, ms.Name)
		ready := 0
		for _, p := range ps {
			if ok, _ := podReady(p); ok {
				ready++
			} else if isLeader(p) && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
				sawLoading = true // running, not Ready: loading
				// The kubelet holds `started` false until the startup probe passes (the
				// simulated cluster's kwok stage sets it true at once).
				if started := p.Status.ContainerStatuses[0].Started; started != nil && !*started {
					sawNotStarted = true
				}
			}
		}
		return len(ps) == 4 && ready == 4, fmt.Errorf("%d pods, %d Ready", len(ps), ready)
	})
	t.Logf("4 pods Ready after %s", took.Round(100*time.Millisecond))
	if !sawLoading || !sawNotStarted {
		t.Errorf("never saw a leader running but not Ready (%v), not started (%v), while its engine loaded", sawLoading, sawNotStarted)
	}
	for _, p := range pods(t, ns, ms.Name) {
		if !isLeader(p) {
			continue
		}
		c := p.Spec.Containers[0]
		if c.StartupProbe == nil || c.StartupProbe.HTTPGet == nil || c.StartupProbe.HTTPGet.Path != "/health" {
			t.Fatalf("leader %s has no HTTP startup probe on /health: %+v", p.Name, c.StartupProbe)
		}
		// Ready no sooner than the load delay after the container started: the probe, not the
		// start, made it Ready.
		started := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		_, readyAt := podReady(p)
		if readyAt.Sub(started) < delay-time.Second { // transition times have second precision
			t.Errorf("leader %s Ready %s after its engine started, before the %s load delay", p.Name, readyAt.Sub(started), delay)
		}
		base := fmt.Sprintf("http://%s:%d", p.Status.PodIP, c.Ports[0].ContainerPort)
		code, body, err := httpGet(base + "/v1/models")
		if err != nil || code != http.StatusOK || !strings.Contains(body, `"id":"Qwen/Qwen3-0.6B"`) {
			t.Errorf("%s/v1/models = %d %q (%v)", base, code, body, err)
		}
		code, body, err = httpGet(base + "/metrics")
		if err != nil || code != http.StatusOK || !strings.Contains(body, `vllm:num_requests_waiting{model_name="Qwen/Qwen3-0.6B"} 0`) {
			t.Errorf("%s/metrics = %d %q (%v)", base, code, body, err)
		}
	}
	testenv.Eventually(t, time.Minute, "the serving Ready", func() (bool, error) {
		var got v1.ModelServing
		if err := cluster.c.Get(ctx(t), client.ObjectKeyFromObject(ms), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == v1.PhaseReady && got.Status.ReadyReplicas == 2,
			fmt.Errorf("phase %s, %d ready groups", got.Status.Phase, got.Status.ReadyReplicas)
	})
	// The leading operator's metrics endpoint (the port its metrics Service selects) says so too.
	leaderPod, _, _, _ := leader(t)
	want := fmt.Sprintf(`kubectl_llm_groups_ready{name=%q,namespace=%q} 2`, ms.Name, ns)
	testenv.Eventually(t, 30*time.Second, "the operator's metrics to count 2 ready groups", func() (bool, error) {
		code, body, err := httpGet(fmt.Sprintf("http://%s:8080/metrics", leaderPod.Status.PodIP))
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("GET /metrics: %d %v", code, err)
		}
		return strings.Contains(body, want), fmt.Errorf("no %s in the metrics", want)
	})
}

// A vllm serving (not custom) with fake-engine as its image: the command line the operator
// generates for vLLM (`vllm serve MODEL --host … --port …`) runs it, its probes pass, and from
// inside its pod nothing beyond the node answers: a public address is unreachable, a name does
// not resolve, while the kubernetes Service does answer (so the dial itself works).
func TestVLLMServingOnFakeEngineAndItsPodsCannotReachOut(t *testing.T) {
	ns := namespace(t, "rn-vllm-")
	ms := fakeServing("vllm", ns, 1, 1)
	ms.Spec.Engine = v1.EngineSpec{Type: v1.EngineVLLM, Image: fakeEngine, Port: 8000,
		Env: []corev1.EnvVar{{Name: "FAKE_ENGINE_LOAD_DELAY", Value: "3s"}}}
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "the vllm serving Ready")
	ps := pods(t, ns, ms.Name)
	if len(ps) != 1 || ps[0].Spec.Containers[0].Command[0] != "vllm" {
		t.Fatalf("want one pod running the vllm command, got %d pods", len(ps))
	}
	base := fmt.Sprintf("http://%s:8000", ps[0].Status.PodIP)
	if code, body, err := httpGet(base + "/v1/models"); err != nil || code != http.StatusOK || !strings.Contains(body, `"id":"Qwen/Qwen3-0.6B"`) {
		t.Fatalf("/v1/models = %d %q (%v)", code, body, err)
	}
	attempt := func(query string) (ok bool, msg string, secs float64) {
		t.Helper()
		code, body, err := httpGet(base + query)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s = %d %q (%v)", query, code, body, err)
		}
		var a struct {
			OK      bool    `json:"ok"`
			Error   string  `json:"error"`
			Seconds float64 `json:"seconds"`
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatal(err)
		}
		return a.OK, a.Error, a.Seconds
	}
	if ok, msg, _ := attempt("/fake/dial?addr=10.96.0.1:443"); !ok {
		t.Fatalf("the pod cannot reach the kubernetes Service either (%s): the checks below would prove nothing", msg)
	}
	for _, addr := range []string{"1.1.1.1:443", "8.8.8.8:53"} {
		if ok, msg, secs := attempt("/fake/dial?addr=" + addr); ok || secs > 2 || !strings.Contains(msg, "unreachable") {
			t.Errorf("from the pod, dial %s: ok=%v %q after %.1fs, want unreachable at once", addr, ok, msg, secs)
		}
	}
	if ok, msg, _ := attempt("/fake/resolve?host=example.com"); ok {
		t.Errorf("from the pod, example.com resolved (%s)", msg)
	}
}

// An engine that stops serving after it was Ready: the generated readiness probe takes the pod
// out of the Service's endpoints and the serving out of Ready, without restarting anything
// (readiness is not liveness); healed, it comes back.
func TestEngineThatStopsServingLeavesReadyAndComesBack(t *testing.T) {
	ns := namespace(t, "rn-flap-")
	ms := fakeServing("flap", ns, 1, 1)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "the serving Ready")
	pod := pods(t, ns, ms.Name)[0]
	base := fmt.Sprintf("http://%s:8000", pod.Status.PodIP)
	setHealth := func(healthy bool) {
		t.Helper()
		resp, err := http.Post(fmt.Sprintf("%s/fake/health?healthy=%v", base, healthy), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST /fake/health: %s", resp.Status)
		}
	}
	setHealth(false)
	var got v1.ModelServing
	took := testenv.Eventually(t, 90*time.Second, "the serving to leave Ready", func() (bool, error) {
		if err := cluster.c.Get(ctx(t), client.ObjectKeyFromObject(ms), &got); err != nil {
			return false, err
		}
		return got.Status.ReadyReplicas == 0 && got.Status.Phase != v1.PhaseReady, fmt.Errorf("phase %s, %d ready", got.Status.Phase, got.Status.ReadyReplicas)
	})
	t.Logf("not Ready %s after /health began to fail (3 failures × %d s); phase %s, group reason %q",
		took.Round(time.Second), 10, got.Status.Phase, got.Status.Groups[0].Reason)
	var eps discoveryv1.EndpointSliceList
	if err := cluster.c.List(ctx(t), &eps, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: ms.Name + "-api"}); err != nil {
		t.Fatal(err)
	}
	endpoints := 0
	for _, sl := range eps.Items {
		for _, e := range sl.Endpoints {
			endpoints++
			if ptr.Deref(e.Conditions.Ready, false) {
				t.Errorf("endpoint %v of %s-api still ready", e.Addresses, ms.Name)
			}
		}
	}
	if endpoints == 0 {
		t.Errorf("no endpoint of %s-api at all: the check above says nothing", ms.Name)
	}
	setHealth(true)
	waitReady(t, ms, "the healed serving Ready again")
	pod = pods(t, ns, ms.Name)[0]
	if n := pod.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("the engine restarted %d times: a failing readiness probe must not restart it", n)
	}
}

// A worker pod deleted by hand on a real node: the kubelet stops it gracefully, so LWS sees it
// with a deletion timestamp (in the simulated cluster kwok removes it at once, and LWS may find
// it gone or already replaced by its StatefulSet: docs/reliability.md) and recreates its whole
// group: every pod of group 1 new, group 0 untouched, the serving Ready again.
func TestWorkerDeletedByHandRecreatesItsWholeGroup(t *testing.T) {
	ns := namespace(t, "rn-worker-")
	ms := fakeServing("worker", ns, 2, 2)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "2 groups × 2 Ready")
	byGroup := func() map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, p := range pods(t, ns, ms.Name) {
			g := p.Labels[lwsv1.GroupIndexLabelKey]
			if out[g] == nil {
				out[g] = map[string]bool{}
			}
			out[g][string(p.UID)] = true
		}
		return out
	}
	before := byGroup()
	if len(before["0"]) != 2 || len(before["1"]) != 2 {
		t.Fatalf("pods by group before the deletion: %v", before)
	}
	var worker *corev1.Pod
	for _, p := range pods(t, ns, ms.Name) {
		if p.Labels[lwsv1.GroupIndexLabelKey] == "1" && !isLeader(p) {
			worker = &p
		}
	}
	if worker == nil {
		t.Fatal("group 1 has no worker pod")
	}
	deleted := time.Now()
	if err := cluster.c.Delete(ctx(t), worker); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "group 1 made again whole and Ready", func() (bool, error) {
		ps := pods(t, ns, ms.Name)
		fresh, kept, ready := 0, 0, 0
		for _, p := range ps {
			if p.Labels[lwsv1.GroupIndexLabelKey] != "1" {
				continue
			}
			if before["1"][string(p.UID)] {
				kept++ // the old group's, terminating or not: the group is not yet made again
				continue
			}
			fresh++
			if ok, _ := podReady(p); ok {
				ready++
			}
		}
		return fresh == 2 && kept == 0 && ready == 2, fmt.Errorf("group 1: %d new pods (%d Ready), %d old left, want 2 new Ready", fresh, ready, kept)
	})
	t.Logf("group 1 made again and Ready %s after its worker was deleted", time.Since(deleted).Round(100*time.Millisecond))
	if now := byGroup(); !maps.Equal(now["0"], before["0"]) {
		t.Errorf("group 0 changed: %v, before %v", now["0"], before["0"])
	}
	waitReady(t, ms, "the serving Ready again")
}

// An engine that never becomes healthy: its startup probe fails until the kubelet restarts the
// container, LeaderWorkerSet recreates the group, and the serving never becomes Available.
// describe shows the probe's own words.
func TestEngineThatNeverBecomesHealthyIsReported(t *testing.T) {
	ns := namespace(t, "rn-sick-")
	ms := fakeServing("sick", ns, 1, 1, "--load-delay=never")
	ms.Spec.Readiness.StartupTimeout = &metav1.Duration{Duration: 20 * time.Second}
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	var out string
	testenv.Eventually(t, 2*time.Minute, "describe to show the failing startup probe and the recreated group", func() (bool, error) {
		out = kubectlLLM(t, "describe", "-n", ns, ms.Name)
		return strings.Contains(out, "Startup probe failed: HTTP probe failed with statuscode: 503") &&
			strings.Contains(out, "RecreateGroup"), errors.New("not yet")
	})
	t.Logf("describe:\n%s", out)
	var got v1.ModelServing
	if err := cluster.c.Get(ctx(t), client.ObjectKeyFromObject(ms), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase == v1.PhaseReady || got.Status.ReadyReplicas != 0 {
		t.Fatalf("a serving whose engine never answers /health is %s with %d ready groups", got.Status.Phase, got.Status.ReadyReplicas)
	}
	if len(got.Status.Groups) != 1 || got.Status.Groups[0].Ready || got.Status.Groups[0].Reason == "" {
		t.Fatalf("status.groups = %+v, want group 0 not ready, with a reason", got.Status.Groups)
	}
}

// ctrTask runs `ctr tasks VERB … ID` against the node's containerd.
func ctrTask(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("ctr", append([]string{"--address", filepath.Join(cluster.dir, "containerd", "containerd.sock"), "-n", "k8s.io", "tasks"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ctr tasks %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// leader is the operator pod holding the Lease, its holder identity (pod_uuid: a new process
// of the same pod has a new one), its container and its restart count.
func leader(t *testing.T) (pod corev1.Pod, identity, container string, restarts int32) {
	t.Helper()
	identity = leaseIdentity(t)
	name, _, _ := strings.Cut(identity, "_")
	if err := cluster.c.Get(ctx(t), client.ObjectKey{Namespace: operatorNS, Name: name}, &pod); err != nil {
		t.Fatalf("the lease holder %s: %v", identity, err)
	}
	cs := pod.Status.ContainerStatuses[0]
	return pod, identity, strings.TrimPrefix(cs.ContainerID, "containerd://"), cs.RestartCount
}

func leaseIdentity(t *testing.T) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := cluster.c.Get(ctx(t), client.ObjectKey{Namespace: operatorNS, Name: operatorName}, &l); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// waitRestartedAndReady waits until the operator pod has restarted its container and is Ready.
func waitRestartedAndReady(t *testing.T, name string, restarts int32, what string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, what, func() (bool, error) {
		var pod corev1.Pod
		if err := cluster.c.Get(ctx(t), client.ObjectKey{Namespace: operatorNS, Name: name}, &pod); err != nil {
			return false, err
		}
		ok, _ := podReady(pod)
		n := pod.Status.ContainerStatuses[0].RestartCount
		return ok && n > restarts, fmt.Errorf("ready %v, restarts %d", ok, n)
	})
}

// The leader hangs (its container frozen: it can neither renew nor hand over the Lease, as in a
// partition): the second replica takes the Lease once it expires. Thawed, the old leader finds
// the Lease gone, exits, is restarted by the kubelet and comes back as a follower; a serving
// made then becomes Ready, which needs the new leader's reconciler and the embedded LWS
// controllers and webhooks.
func TestOperatorLeaderHangsSecondReplicaTakesOver(t *testing.T) {
	old, oldID, container, restarts := leader(t)
	// Its log, followed from before the freeze until the container exits: `kubectl logs
	// --previous` alone lost it when the kubelet restarted the container twice and removed the
	// first (seen under load).
	var followed bytes.Buffer
	follow := exec.Command("kubectl", "-n", operatorNS, "logs", "-f", "--tail=50", old.Name)
	follow.Stdout, follow.Stderr = &followed, &followed
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()
	t.Cleanup(func() { _ = follow.Process.Kill() })
	time.Sleep(time.Second) // the stream is open before the container freezes
	ctrTask(t, "pause", container)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			ctrTask(t, "resume", container)
		}
	}
	t.Cleanup(thaw)
	var newID string
	took := testenv.Eventually(t, time.Minute, "the second replica to take the Lease", func() (bool, error) {
		newID = leaseIdentity(t)
		return newID != "" && !strings.HasPrefix(newID, old.Name+"_"), fmt.Errorf("holder %s", newID)
	})
	t.Logf("%s took the Lease %s after %s froze", newID, took.Round(100*time.Millisecond), oldID)
	thaw()
	waitRestartedAndReady(t, old.Name, restarts, "the thawed old leader to step down (exit) and come back Ready")
	// It exited because it lost the Lease, not because the kubelet killed it (liveness would
	// need 3 × 20 s; it was frozen for less).
	select {
	case <-followDone:
	case <-time.After(10 * time.Second):
		_ = follow.Process.Kill()
		<-followDone
	}
	logs := followed.String()
	if !strings.Contains(logs, "leader election lost") {
		previous, err := exec.Command("kubectl", "-n", operatorNS, "logs", old.Name, "--previous").CombinedOutput()
		if err != nil || !strings.Contains(string(previous), "leader election lost") {
			t.Errorf("the old leader's last log does not say it lost the election; followed:\n%s\n--previous (%v):\n%s",
				testenv.LastLines(logs, 5), err, testenv.LastLines(string(previous), 5))
		}
	}
	if id := leaseIdentity(t); id != newID {
		t.Errorf("the Lease moved from %s to %s when the old leader came back", newID, id)
	}
	ns := namespace(t, "rn-failover-")
	ms := fakeServing("after", ns, 1, 2)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "a serving made after the failover to become Ready")
}

// The leader is killed (SIGKILL: no hand-over): once the Lease expires a new operator process
// holds it (the other replica, or the killed one restarted by the kubelet, whichever asks first)
// and the operator carries on.
func TestOperatorLeaderKilledANewLeaderTakesOver(t *testing.T) {
	old, oldID, container, restarts := leader(t)
	ctrTask(t, "kill", "-s", "SIGKILL", container)
	var newID string
	took := testenv.Eventually(t, time.Minute, "a new leader", func() (bool, error) {
		newID = leaseIdentity(t)
		return newID != "" && newID != oldID, fmt.Errorf("holder %s", newID)
	})
	t.Logf("%s took the Lease %s after %s was killed", newID, took.Round(100*time.Millisecond), oldID)
	waitRestartedAndReady(t, old.Name, restarts, "the killed replica to restart and be Ready")
	ns := namespace(t, "rn-killed-")
	ms := fakeServing("after", ns, 1, 2)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "a serving made after the kill to become Ready")
}

// The operator Deployment rolls to a new image (as an upgrade does: `kubectl llm install` with
// another --image) while LeaderWorkerSets are created all along: the embedded LWS webhooks
// (failurePolicy Fail) must answer through the whole rollout, from old pods and new.
func TestOperatorRollsToANewImageWhileLWSAdmissionKeepsWorking(t *testing.T) {
	// Another reference to the same bytes: the pod template changes, so the Deployment rolls
	// (a new one each run, so that a second run on the same cluster rolls too).
	next := fmt.Sprintf("localhost/kubectl-llm:rollout-%d", time.Now().Unix())
	tag := exec.Command("ctr", "--address", filepath.Join(cluster.dir, "containerd", "containerd.sock"), "-n", "k8s.io",
		"images", "tag", "--force", operatorImage, next)
	if out, err := tag.CombinedOutput(); err != nil {
		t.Fatalf("ctr images tag: %v\n%s", err, out)
	}
	ns := namespace(t, "rn-rollout-")
	// Admission all along: a dry-run create goes through the mutating and validating webhooks
	// and stores nothing.
	probe := testenv.ProbeAdmission(cluster.c, ns, fakeEngine, 100*time.Millisecond)
	kubectlLLM(t, "install", "--lws=embedded", "--image", next)
	took := testenv.Eventually(t, 3*time.Minute, "the operator Deployment rolled out on "+next, func() (bool, error) {
		var list corev1.PodList
		if err := cluster.c.List(ctx(t), &list, client.InNamespace(operatorNS), client.MatchingLabels{"app.kubernetes.io/component": "operator"}); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range list.Items {
			if ok, _ := podReady(p); !ok || p.Spec.Containers[0].Image != next || p.DeletionTimestamp != nil {
				return false, fmt.Errorf("pod %s: image %s, ready %v, terminating %v", p.Name, p.Spec.Containers[0].Image, ok, p.DeletionTimestamp != nil)
			}
			ready++
		}
		return ready == 2, fmt.Errorf("%d pods", ready)
	})
	// A little more after the last old pod went, then stop.
	time.Sleep(2 * time.Second)
	r := probe.Stop()
	t.Logf("rolled out in %s; %s", took.Round(100*time.Millisecond), r)
	if r.Tries < 10 {
		t.Fatalf("only %d admission requests during the rollout: it says nothing", r.Tries)
	}
	if r.Failures > 0 {
		t.Errorf("%d of %d LeaderWorkerSet admissions failed during the rollout; the first: %v", r.Failures, r.Tries, r.First)
	}
	// And the new operator serves: a serving made now becomes Ready, its pods labelled by the
	// LWS pod webhook.
	ms := fakeServing("upgraded", ns, 1, 2)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "a serving made after the upgrade to become Ready")
	for _, p := range pods(t, ns, ms.Name) {
		if p.Labels[lwsv1.GroupIndexLabelKey] == "" || p.Labels[lwsv1.WorkerIndexLabelKey] == "" {
			t.Errorf("pod %s lacks the labels the LWS pod webhook sets: %v", p.Name, p.Labels)
		}
	}
}

// Uninstall (last: it removes what the other tests use) deletes the servings first, then the
// operator, then the CRDs, and leaves nothing of kubectl llm: no namespace, CRDs, cluster roles
// and bindings, webhook configurations, and no container of the operator or the engines left on
// the node.
func TestUninstallLeavesNothingBehind(t *testing.T) {
	ns := namespace(t, "rn-uninstall-")
	ms := fakeServing("doomed", ns, 1, 2)
	if err := cluster.c.Create(ctx(t), ms); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ms, "the serving to become Ready")
	if before := leftovers(t); len(before) < 5 {
		t.Fatalf("before uninstall the check sees only %v: it could not tell what uninstall leaves", before)
	}
	kubectlLLM(t, "uninstall", "--yes", "--timeout", "2m")
	// The kubelet removes the containers of deleted pods in its garbage collection, once a minute.
	testenv.Eventually(t, 3*time.Minute, "nothing of kubectl llm left", func() (bool, error) {
		left := leftovers(t)
		return len(left) == 0, fmt.Errorf("left: %v", left)
	})
}

// leftovers lists what of kubectl llm is still in the cluster or on the node.
func leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	var nsObj corev1.Namespace
	if err := cluster.c.Get(ctx(t), client.ObjectKey{Name: operatorNS}, &nsObj); err == nil {
		left = append(left, "namespace "+operatorNS+" ("+string(nsObj.Status.Phase)+")")
	}
	for _, l := range []client.ObjectList{&apiextensionsv1.CustomResourceDefinitionList{}, &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{},
		&admissionv1.MutatingWebhookConfigurationList{}, &admissionv1.ValidatingWebhookConfigurationList{}} {
		if err := cluster.c.List(ctx(t), l); err != nil {
			left = append(left, err.Error())
			continue
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m := o.(client.Object)
			if strings.Contains(m.GetName(), "kubectl-llm") || strings.HasSuffix(m.GetName(), ".kubectl-llm.dev") ||
				m.GetName() == "leaderworkersets.leaderworkerset.x-k8s.io" {
				left = append(left, fmt.Sprintf("%T %s", o, m.GetName()))
			}
		}
	}
	var podList corev1.PodList
	if err := cluster.c.List(ctx(t), &podList); err != nil {
		t.Fatal(err)
	}
	for _, p := range podList.Items {
		for _, c := range p.Spec.Containers {
			if c.Image == operatorImage || strings.HasPrefix(c.Image, "localhost/kubectl-llm:") || c.Image == fakeEngine {
				left = append(left, "pod "+p.Namespace+"/"+p.Name)
			}
		}
	}
	// On the node: running containers (tasks) of the images.
	out, err := exec.Command("ctr", "--address", filepath.Join(cluster.dir, "containerd", "containerd.sock"), "-n", "k8s.io",
		"containers", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr containers ls: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "localhost/kubectl-llm:") || strings.Contains(line, fakeEngine) {
			left = append(left, "container "+strings.Fields(line)[0])
		}
	}
	return left
}
