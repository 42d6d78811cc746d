// Command scale is the operator's scale harness: on the simulated cluster it runs the real
// `kubectl-llm operator --lws=embedded`, creates N servings (one group of one pod each, no
// simulated load delay) as fast as one client can, and measures for each serving the time from
// its creation until its status says Ready, plus the operator's CPU time and memory.
//
//	go run ./hack/scale -n 10,100,300
//
// It prints a Markdown table for docs/performance.md.
package main

import (
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
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

func main() {
	counts := flag.String("n", "10,100", "comma-separated numbers of servings, one run each")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if err := run(*counts); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(counts string) error {
	ctx := context.Background()
	root := testenv.RepoRoot()
	dir, err := os.MkdirTemp("", "kubectl-llm-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "kubectl-llm")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-llm")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	cluster, err := sim.Start(ctx)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	// The install's CRDs, ServiceAccount, roles and webhook configurations; the operator runs as
	// that ServiceAccount, as in a cluster.
	if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
		return err
	}
	cfg := cluster.Config
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "operator.log")
	defer func() {
		if raw, err := os.ReadFile(logPath); err == nil {
			n := 0
			for _, l := range strings.Split(string(raw), "\n") {
				if strings.Contains(l, "error") && n < 5 {
					fmt.Fprintln(os.Stderr, "operator:", l)
					n++
				}
			}
		}
	}()
	op, err := startOperator(bin, cluster.Kubeconfig, logPath)
	if err != nil {
		return err
	}
	defer stopOperator(op)
	time.Sleep(2 * time.Second) // let the operator's caches settle before measuring

	fmt.Println("| servings | create all | all Ready | per-serving delay p50 / p90 / max | operator CPU | CPU per serving | operator RSS |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for i, s := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-n: %w", err)
		}
		row, err := measure(ctx, c, op.Process.Pid, fmt.Sprintf("scale-%d", i), n)
		if err != nil {
			return err
		}
		fmt.Println(row)
	}
	return nil
}

func measure(ctx context.Context, c client.WithWatch, pid int, ns string, n int) (string, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", err
	}
	for { // pods need the namespace's default ServiceAccount
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	w, err := c.Watch(ctx, &v1.ModelServingList{}, client.InNamespace(ns))
	if err != nil {
		return "", err
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	ready := map[string]time.Duration{}
	done := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			ms, ok := ev.Object.(*v1.ModelServing)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			mu.Lock()
			if t, seen := created[ms.Name]; seen && ms.Status.Phase == v1.PhaseReady {
				if _, had := ready[ms.Name]; !had {
					ready[ms.Name] = now.Sub(t)
					if len(ready) == n {
						close(done)
					}
				}
			}
			mu.Unlock()
		}
	}()
	cpu0, err := cpuTime(pid)
	if err != nil {
		return "", err
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		ms := &v1.ModelServing{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%04d", i), Namespace: ns},
			Spec:       v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To[int32](1), GroupSize: 1},
		}
		mu.Lock()
		created[ms.Name] = time.Now()
		mu.Unlock()
		if err := c.Create(ctx, ms); err != nil {
			return "", err
		}
	}
	createAll := time.Since(start)
	select {
	case <-done:
	case <-time.After(time.Duration(n)*time.Second + 2*time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return "", fmt.Errorf("%d servings: only %d Ready in time", n, len(ready))
	}
	allReady := time.Since(start)
	slowest := ""
	for name, d := range ready {
		if slowest == "" || d > ready[slowest] {
			slowest = name
		}
	}
	trace(ctx, c, ns, slowest, created[slowest], ready[slowest])
	cpu1, err := cpuTime(pid)
	if err != nil {
		return "", err
	}
	rss, err := rssMiB(pid)
	if err != nil {
		return "", err
	}
	mu.Lock()
	var delays []time.Duration
	for _, d := range ready {
		delays = append(delays, d)
	}
	mu.Unlock()
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	q := func(p float64) time.Duration { return delays[int(p*float64(len(delays)-1))] }
	cpu := cpu1 - cpu0
	return fmt.Sprintf("| %d | %s | %s | %s / %s / %s | %s | %.1f ms | %.0f MiB |", n, round(createAll), round(allReady),
		round(q(0.5)), round(q(0.9)), round(delays[len(delays)-1]), round(cpu), float64(cpu.Microseconds())/1000/float64(n), rss), nil
}

// trace prints, for one serving, when each object of its pipeline appeared, in seconds after the
// serving was created (the API's timestamps have whole seconds).
func trace(ctx context.Context, c client.Client, ns, name string, created time.Time, ready time.Duration) {
	at := func(t metav1.Time) string {
		return fmt.Sprintf("%+.0fs", t.Sub(created.Truncate(time.Second)).Seconds())
	}
	line := []string{"trace " + name + ":"}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lws); err == nil {
		line = append(line, "LeaderWorkerSet "+at(lws.CreationTimestamp))
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts); err == nil {
		line = append(line, "StatefulSet "+at(sts.CreationTimestamp))
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-0"}, pod); err == nil {
		line = append(line, "pod "+at(pod.CreationTimestamp))
		for _, cond := range pod.Status.Conditions {
			line = append(line, string(cond.Type)+" "+at(cond.LastTransitionTime))
		}
	}
	line = append(line, fmt.Sprintf("serving Ready seen %.1fs", ready.Seconds()))
	fmt.Fprintln(os.Stderr, strings.Join(line, "  "))
}

func round(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

// cpuTime is the user+system CPU time of a process, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

func rssMiB(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func startOperator(bin, kubeconfig, logPath string) (*exec.Cmd, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	probe, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	webhook, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "operator", "--kubeconfig", kubeconfig, "--as", sim.OperatorServiceAccount, "--lws=embedded", "--leader-elect=false",
		"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probe),
		"--webhook-port", strconv.Itoa(webhook), "--zap-log-level=error")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for i := 0; i < 300; i++ {
		if out, err := exec.Command("curl", "-sf", fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)).Output(); err == nil && len(out) > 0 {
			return cmd, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopOperator(cmd)
	return nil, fmt.Errorf("operator not ready; see %s", logPath)
}

func stopOperator(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_, _ = cmd.Process.Wait()
}
