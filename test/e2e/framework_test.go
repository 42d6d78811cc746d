// Package e2e runs the seed articles' measured LWS behaviours through kubectl-llm on the simulated
// GPU cluster (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok fake GPU
// nodes), with the real `kubectl-llm operator --lws=embedded` binary hosting LWS.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var (
	cluster *sim.Cluster
	kubectl string // the kubectl built with the control plane (the one on PATH is too old)
	kc      client.Client
	binary  string // the kubectl-llm binary under test
	op      *operatorProcess
)

// alongside is how many of the tests that leave the operator and the control plane alone
// (calmTest) run at once, after the others: they wait on the simulated cluster (pods loading,
// rollouts stepping), not on the CPU, so go test's default of GOMAXPROCS (2 here) would leave the
// machine idle. A -parallel on the command line wins. Three at once stay within the cluster's 32
// GPUs (each asks for 2 to 10). The prefill/decode tests ask for 16 to 20 each: run beside others
// they starved (groups half scheduled, LeaderWorkerSet does not gang-schedule) and timed out, so
// they are not calm.
const alongside = 3

// calmTest marks a test that neither stops, restarts nor reconfigures the operator or the control
// plane, nor takes most of the GPUs: it runs alongside others like it (see alongside).
func calmTest(t *testing.T) { t.Parallel() }

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // the operator under test logs to its own file
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(alongside)); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kubectl-llm-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if binary, err = testenv.BuildBinary(dir); err != nil {
		return 0, err
	}
	assets, err := testenv.Assets()
	if err != nil {
		return 0, err
	}
	kubectl = filepath.Join(assets, "kubectl")
	t0 := time.Now()
	cluster, err = sim.Start(ctx)
	if err != nil {
		return 0, fmt.Errorf("start the simulated cluster: %w", err)
	}
	defer cluster.Stop()
	fmt.Fprintf(os.Stderr, "simulated cluster up in %s\n", time.Since(t0).Round(time.Millisecond))
	kc, err = client.New(cluster.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return 0, err
	}
	if err := installCRDs(ctx); err != nil {
		return 0, err
	}
	op = &operatorProcess{logPath: filepath.Join(dir, "operator.log")}
	if err := op.start(); err != nil {
		reportFailedRun(dir)
		return 0, err
	}
	defer op.stop()
	code := m.Run()
	if code != 0 {
		reportFailedRun(dir)
	}
	return code, nil
}

// reportFailedRun prints the operator log's tail and keeps the run's logs.
func reportFailedRun(dir string) {
	if log, err := os.ReadFile(op.logPath); err == nil {
		fmt.Fprintf(os.Stderr, "---- operator log (last 60 entries, repeats collapsed) ----\n%s\n", testenv.LogTail(string(log), 60, 600))
	}
	keepFailedLogs(dir)
}

// keepFailedLogs copies the logs of a failed run (the operator's runs, the simulated cluster's
// components) to .e2e/failed-logs/<time> at the top of the checkout, which git ignores: the run's
// own directory goes when it ends.
func keepFailedLogs(dir string) {
	keep := filepath.Join("..", "..", ".e2e", "failed-logs", time.Now().UTC().Format("20060102-150405"))
	n := 0
	for _, from := range []string{dir, cluster.Dir} {
		_ = filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
				return nil
			}
			rel, _ := filepath.Rel(from, path)
			to := filepath.Join(keep, filepath.Base(from), rel)
			if b, err := os.ReadFile(path); err == nil && os.MkdirAll(filepath.Dir(to), 0o755) == nil && os.WriteFile(to, b, 0o644) == nil {
				n++
			}
			return nil
		})
	}
	if abs, err := filepath.Abs(keep); err == nil && n > 0 {
		fmt.Fprintf(os.Stderr, "e2e: %d logs of the failed run kept in %s\n", n, abs)
	}
}

// installCRDs applies what `kubectl llm install --lws=embedded` applies but the Deployment (the
// CRDs, the operator's ServiceAccount and roles, the webhook configurations it fills in), and
// waits until the CRDs are served.
func installCRDs(ctx context.Context) error {
	if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		err1 := kc.List(ctx, &v1.ModelServingList{})
		err2 := kc.List(ctx, &lwsv1.LeaderWorkerSetList{})
		if err1 == nil && err2 == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("CRDs not served after 30s")
}

// operatorProcess is `kubectl-llm operator --lws=embedded` against the simulated cluster, as the
// operator's ServiceAccount (impersonated), held to the roles the install ships. args are added
// to its command line (e.g. --leader-elect=true), env to its environment (a failpoint).
type operatorProcess struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{} // closed once the process has exited and been reaped
	exit  atomic.Int32  // its exit status, once done (set before done is closed)
	port  int           // the webhook port it serves
	pprof int           // the loopback port of its pprof endpoint (goroutines, heap)
	// goroutines0 is its goroutine count at the first check of its health (0 before it).
	goroutines0 int
	logPath     string
	// logFrom is the log's size when its latest run started: what that run wrote follows it.
	logFrom int64
	// tmp is the TMPDIR of its latest run, under the log's directory: what it leaves there (its
	// webhook certificates, unless stopped by SIGKILL) is a leak.
	tmp  string
	runs int
	args []string
	// kubeconfig, when set, replaces the cluster's (an API server behind another address).
	kubeconfig string
	// laptop runs it as someone runs it from a laptop: with the admin kubeconfig (no --as) and
	// the command's own defaults (leader election, its Lease, LWS hosting) but for its ports.
	laptop bool
}

func (o *operatorProcess) start() error { return o.startWith(nil) }

// startWith starts the operator with extra environment variables and waits until it is ready; a
// process that exits first (a failpoint reached at once) is an error.
func (o *operatorProcess) startWith(env []string) error {
	o.mu.Lock()
	port, err := testenv.FreePort()
	if err != nil {
		o.mu.Unlock()
		return err
	}
	probe, err := testenv.FreePort()
	if err != nil {
		o.mu.Unlock()
		return err
	}
	pprof, err := testenv.FreePort()
	if err != nil {
		o.mu.Unlock()
		return err
	}
	log, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		o.mu.Unlock()
		return err
	}
	kubeconfig := cluster.Kubeconfig
	if o.kubeconfig != "" {
		kubeconfig = o.kubeconfig
	}
	args := []string{"operator", "--kubeconfig", kubeconfig}
	if !o.laptop {
		args = append(args, "--as", sim.OperatorServiceAccount, "--lws=embedded", "--leader-elect=false")
	}
	args = append(append(args, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe),
		"--pprof-bind-address=127.0.0.1:"+strconv.Itoa(pprof), "--webhook-port", strconv.Itoa(port)), o.args...)
	o.runs++
	tmp := filepath.Join(filepath.Dir(o.logPath), fmt.Sprintf("tmp-%s-%d", filepath.Base(o.logPath), o.runs))
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		o.mu.Unlock()
		_ = log.Close()
		return err
	}
	o.tmp = tmp
	if st, err := log.Stat(); err == nil {
		o.logFrom = st.Size()
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	if err := cmd.Start(); err != nil {
		o.mu.Unlock()
		_ = log.Close()
		return err
	}
	done := make(chan struct{})
	o.cmd, o.done, o.port, o.pprof, o.goroutines0 = cmd, done, port, pprof, 0
	go func() {
		err := cmd.Wait()
		_ = log.Close()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		o.exit.Store(int32(code))
		close(done)
	}()
	o.mu.Unlock()
	// Ready once the webhook server serves (the readiness check covers it).
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("the operator exited (status %d) before it was ready; its last words:\n%s\n(see %s)", o.exitCode(), o.lastWords(), o.logPath)
		default:
		}
		if out, err := exec.Command("curl", "-sf", fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)).CombinedOutput(); err == nil && len(out) > 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("operator not ready after 60s; see %s", o.logPath)
}

func (o *operatorProcess) exitCode() int { return int(o.exit.Load()) }

// lastWords is the end of what the latest run wrote to its log: why it stopped, when it did.
func (o *operatorProcess) lastWords() string {
	o.mu.Lock()
	from := o.logFrom
	o.mu.Unlock()
	b, err := os.ReadFile(o.logPath)
	if err != nil {
		return err.Error()
	}
	if from > int64(len(b)) {
		from = 0
	}
	return testenv.LogTail(string(b[from:]), 6, 400)
}

// running reports whether the process is alive (started and not exited).
func (o *operatorProcess) running() bool {
	o.mu.Lock()
	cmd, done := o.cmd, o.done
	o.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// waitExit waits until the process exits on its own (a failpoint) and returns its status.
func (o *operatorProcess) waitExit(timeout time.Duration) (int, error) {
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	if done == nil {
		return 0, fmt.Errorf("the operator was not started")
	}
	select {
	case <-done:
		o.mu.Lock()
		defer o.mu.Unlock()
		o.cmd = nil
		return o.exitCode(), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("the operator did not exit within %s", timeout)
	}
}

func (o *operatorProcess) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil || o.cmd.Process == nil {
		return
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(20 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
	o.cmd = nil
}

// kill SIGKILLs the operator (no graceful shutdown, no lease release) and reaps it.
func (o *operatorProcess) kill() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil || o.cmd.Process == nil {
		return
	}
	_ = o.cmd.Process.Kill()
	<-o.done
	o.cmd = nil
	_ = os.RemoveAll(o.tmp) // nothing cleans up after a SIGKILL
}

// leftInTemp lists what the operator's latest run left in its TMPDIR.
func (o *operatorProcess) leftInTemp() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	entries, _ := os.ReadDir(o.tmp)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// signal sends the operator a signal (SIGSTOP, SIGCONT: a frozen process).
func (o *operatorProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil || o.cmd.Process == nil {
		t.Fatal("the operator is not running")
	}
	if err := o.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// kubectlLLM runs the binary under test against the simulated cluster.
func kubectlLLM(args ...string) (string, error) {
	cmd := exec.Command(binary, append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := newNamespace()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kc.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns
}

// newNamespace makes a namespace for a test and waits until pods can be made in it; the caller
// deletes it.
func newNamespace() (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := kc.Create(context.Background(), ns); err != nil {
		return "", err
	}
	// Pods need the namespace's default ServiceAccount, which kube-controller-manager makes.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return ns.Name, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no default ServiceAccount in %s after 30s: %w", ns.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newServing is a serving of replicas groups of size pods, each pod asking gpus GPUs.
func newServing(ns, name string, replicas, size, gpus int32) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
			v1.AnnotationSimulatedLoadDelay: "1s", // weights "load" for a second before a pod is Ready
		}},
		Spec: v1.ModelServingSpec{
			Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To(replicas), GroupSize: size,
			Resources: v1.ResourceSpec{GPUs: ptr.To(gpus)},
		},
	}
}

// podInfo is what the tests track of a pod.
type podInfo struct {
	Name     string
	UID      types.UID
	Group    int
	Worker   int
	Revision string
	Ready    bool
	Deleting bool
	Node     string // "" until the scheduler binds it
}

func pods(t *testing.T, ns, name string) []podInfo {
	t.Helper()
	list := &corev1.PodList{}
	if err := kc.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.LabelName: name}); err != nil {
		t.Fatal(err)
	}
	var out []podInfo
	for _, p := range list.Items {
		if info, ok := toInfo(p); ok {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Worker < out[j].Worker
	})
	return out
}

// toInfo reads a pod of a group; ok is false for a pod LWS has not labelled (yet).
func toInfo(p corev1.Pod) (podInfo, bool) {
	if !madeByAStatefulSet(&p) {
		return podInfo{}, false // not a pod of a group (a forged one carrying our labels)
	}
	g, err1 := strconv.Atoi(p.Labels[lwsv1.GroupIndexLabelKey])
	w, err2 := strconv.Atoi(p.Labels[lwsv1.WorkerIndexLabelKey])
	if err1 != nil || err2 != nil {
		return podInfo{}, false
	}
	info := podInfo{Name: p.Name, UID: p.UID, Group: g, Worker: w, Revision: p.Labels[v1.LabelRevision], Deleting: p.DeletionTimestamp != nil, Node: p.Spec.NodeName}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			info.Ready = true
		}
	}
	return info, true
}

// madeByAStatefulSet: the pod is controlled by a StatefulSet, as every pod of an LWS group is
// (the leader's and the workers' StatefulSets); a pod that only carries our labels is not.
func madeByAStatefulSet(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "StatefulSet"
}

// live are the pods not being deleted.
func live(ps []podInfo) []podInfo {
	var out []podInfo
	for _, p := range ps {
		if !p.Deleting {
			out = append(out, p)
		}
	}
	return out
}

// readyGroups counts groups whose size pods all exist, are ready and not being deleted.
func readyGroups(ps []podInfo, size int) int {
	byGroup := map[int]int{}
	for _, p := range ps {
		if p.Ready && !p.Deleting {
			byGroup[p.Group]++
		}
	}
	n := 0
	for _, c := range byGroup {
		if c == size {
			n++
		}
	}
	return n
}

func getServing(t *testing.T, ns, name string) *v1.ModelServing {
	t.Helper()
	ms := &v1.ModelServing{}
	if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// waitReady waits until the serving's status says every group is ready on its update revision.
func waitReady(t *testing.T, ns, name string, timeout time.Duration) time.Duration {
	t.Helper()
	return testenv.Eventually(t, timeout, name+" Ready", func() (bool, error) {
		ms := &v1.ModelServing{}
		if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ms); err != nil {
			return false, err
		}
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.Phase == v1.PhaseReady, fmt.Errorf("phase %s, %s ready", ms.Status.Phase, ms.Status.ReadyGroups)
	})
}

// update re-reads the serving and applies change to it until the write goes through.
func update(t *testing.T, ns, name string, change func(*v1.ModelServing)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "update of "+name, func() (bool, error) {
		ms := getServing(t, ns, name)
		change(ms)
		err := kc.Update(context.Background(), ms)
		if apierrors.IsConflict(err) {
			return false, err
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, nil
	})
}
