// Package sim starts the simulated GPU cluster of hack/sim.sh (kwokctl, binary runtime:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// nodes carrying nvidia.com/gpu) for end-to-end tests.
//
// Each Start makes its own cluster (own state directory, name and ports), so test
// packages may run at the same time (their `hack/sim.sh up`s take turns, ~10 s each). Stop the cluster when done, e.g. from TestMain:
//
//	c, err := sim.Start(ctx)
//	...
//	code := m.Run()
//	c.Stop()
//
// The components are detached processes that would outlive a test binary that dies
// without calling Stop (a panic, a `go test -timeout`): Start also leaves a small
// watchdog process that deletes the cluster once the test process is gone.
package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults of hack/sim.sh.
const (
	DefaultNodes       = 4
	DefaultGPUsPerNode = 8
	// NodeNamePrefix names the fake GPU nodes: gpu-node-0, gpu-node-1, ...
	NodeNamePrefix = "gpu-node-"
	// GPUResource is the extended resource the fake nodes offer.
	GPUResource = "nvidia.com/gpu"
)

// Options shape the cluster; zero values take hack/sim.sh's defaults.
type Options struct {
	// Nodes is the number of fake GPU nodes (SIM_NODES).
	Nodes int
	// GPUsPerNode is the nvidia.com/gpu capacity of each node (SIM_GPUS).
	GPUsPerNode int
	// Log receives the output of hack/sim.sh (kwokctl's logs); nil discards it (it is
	// still included in errors).
	Log io.Writer
}

// Cluster is a running simulated cluster.
type Cluster struct {
	// Name is the kwokctl cluster name (SIM_NAME).
	Name string
	// Dir is the state directory (SIM_DIR): kubeconfig, rendered config, kwokctl workdir
	// with the components' logs under kwok/clusters/<Name>/logs.
	Dir string
	// Kubeconfig is the path of the cluster's kubeconfig.
	Kubeconfig string
	// Config is a client configuration for the cluster's admin.
	Config *rest.Config
	// Nodes and GPUsPerNode are the cluster's shape.
	Nodes, GPUsPerNode int

	log      io.Writer
	watchdog *os.Process
	stopOnce sync.Once
	stopErr  error
	// mu guards down, set once Stop began: what a restart still watches is not started again.
	mu   sync.Mutex
	down bool
	// gone is the background restart of components that gave up, of the last restart: the next
	// waits for it (it would take the component stopped next for one to start again).
	gone sync.WaitGroup
}

var seq atomic.Int64

// RepoRoot is the root of the kubectl-llm checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Start creates a simulated cluster with the default shape (hack/sim.sh up).
func Start(ctx context.Context) (*Cluster, error) {
	return StartWith(ctx, Options{})
}

// StartWith creates a simulated cluster of the given shape (hack/sim.sh up).
func StartWith(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes <= 0 {
		opts.Nodes = DefaultNodes
	}
	if opts.GPUsPerNode <= 0 {
		opts.GPUsPerNode = DefaultGPUsPerNode
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// Read the script and the config here, so that `go test` caches results of tests using
	// the cluster only until either changes (it tracks the files a test opens, not those
	// its child processes do).
	for _, f := range []string{"sim.sh", filepath.Join("sim", "kwokctl.yaml"), filepath.Join("..", "config", "install", "embedded.yaml"), filepath.Join("..", "config", "install", "default.yaml")} {
		if _, err := os.ReadFile(filepath.Join(RepoRoot(), "hack", f)); err != nil {
			return nil, err
		}
	}
	n := seq.Add(1)
	dir, err := os.MkdirTemp("", fmt.Sprintf("kubectl-llm-sim-%d-%d-", os.Getpid(), n))
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Name:        fmt.Sprintf("sim-%d-%d", os.Getpid(), n),
		Dir:         dir,
		Nodes:       opts.Nodes,
		GPUsPerNode: opts.GPUsPerNode,
		log:         opts.Log,
	}
	out, err := c.script(ctx, "up")
	if err != nil {
		// up may have got as far as starting components.
		_ = c.Stop()
		return nil, err
	}
	c.Kubeconfig = strings.TrimSpace(out)
	if c.Kubeconfig != filepath.Join(dir, "kubeconfig") {
		_ = c.Stop()
		return nil, fmt.Errorf("hack/sim.sh up printed %q, want the kubeconfig path", out)
	}
	c.startWatchdog()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("load %s: %w", c.Kubeconfig, err)
	}
	// The API server runs without QPS limits; do not throttle the tests either.
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	return c, nil
}

// Stop deletes the cluster (hack/sim.sh down): every component process is gone when it
// returns. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.down = true
		c.mu.Unlock()
		if c.watchdog != nil {
			_ = c.watchdog.Kill()
			_, _ = c.watchdog.Wait()
		}
		_, c.stopErr = c.script(context.Background(), "down")
		if c.stopErr == nil {
			c.stopErr = os.RemoveAll(c.Dir)
		}
	})
	return c.stopErr
}

// LogsDir is the directory of the components' logs (etcd.log, kube-apiserver.log, ...,
// kwok-controller.log); it is removed by Stop.
func (c *Cluster) LogsDir() string {
	return filepath.Join(c.Dir, "kwok", "clusters", c.Name, "logs")
}

func (c *Cluster) env() []string {
	return append(os.Environ(),
		"SIM_DIR="+c.Dir,
		"SIM_NAME="+c.Name,
		"SIM_NODES="+strconv.Itoa(c.Nodes),
		"SIM_GPUS="+strconv.Itoa(c.GPUsPerNode),
	)
}

// OperatorServiceAccount is the identity the operator runs as on the simulated cluster, the
// ServiceAccount `kubectl llm install` makes: pass it to `kubectl llm operator --as`.
const OperatorServiceAccount = "system:serviceaccount:kubectl-llm-system:kubectl-llm-operator"

// InstallOperatorManifests applies what `kubectl llm install --lws=variant` applies ("embedded"
// or "default"), except the operator Deployment (hack/sim.sh install), and waits until the CRDs
// are served. The operator then runs beside the cluster as OperatorServiceAccount.
func (c *Cluster) InstallOperatorManifests(ctx context.Context, variant string) error {
	_, err := c.script(ctx, "install", variant)
	return err
}

func (c *Cluster) script(ctx context.Context, verb string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(RepoRoot(), "hack", "sim.sh"), verb}, args...)...)
	cmd.Env = c.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, c.log)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/sim.sh %s (SIM_DIR=%s): %w\n%s", verb, c.Dir, err, stderr.String())
	}
	return stdout.String(), nil
}

// startWatchdog leaves a process, in its own session so that a Ctrl-C or the end of
// the test binary does not take it along, that runs `hack/sim.sh down` once this
// process has exited. Stop kills it first.
func (c *Cluster) startWatchdog() {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done; exec bash %q down`,
		os.Getpid(), filepath.Join(RepoRoot(), "hack", "sim.sh"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = c.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(c.log, "sim: no watchdog for %s: %v\n", c.Name, err)
		return
	}
	c.watchdog = cmd.Process
}

// component is a running control-plane process as kwokctl started it.
type component struct {
	pidFile, cwd string
	pid          int
	argv, env    []string
}

func readComponent(pidFile string) (component, error) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return component{}, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return component{}, fmt.Errorf("%s: %w", pidFile, err)
	}
	proc := fmt.Sprintf("/proc/%d/", pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		return component{}, fmt.Errorf("pid %d of %s: %w", pid, pidFile, err)
	}
	environ, err := os.ReadFile(proc + "environ")
	if err != nil {
		return component{}, err
	}
	cwd, err := os.Readlink(proc + "cwd")
	if err != nil {
		return component{}, err
	}
	return component{pidFile: pidFile, cwd: cwd, pid: pid,
		argv: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"),
		env:  strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")}, nil
}

// start runs the component again, detached as kwokctl runs it, logging where it logged, and
// records its new pid in its pid file (so Stop still finds it).
func (c component) start(logsDir string) error {
	name := strings.TrimSuffix(filepath.Base(c.pidFile), ".pid")
	log, err := os.OpenFile(filepath.Join(logsDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env, cmd.Dir = c.env, c.cwd
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s again: %w", name, err)
	}
	go func() { _ = cmd.Wait() }() // reap it when Stop kills it
	return os.WriteFile(c.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 10 s), keeps it down for
// down, and starts it again with the same command line, environment and working directory; it
// returns once /readyz answers. A component that exits meanwhile or in the next seconds
// (kube-controller-manager and kube-scheduler give up when they cannot renew their leases) is
// started again in the background, as a kubelet restarts a static pod.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	return c.restart(ctx, "kube-apiserver", down)
}

// RestartEtcd does the same with etcd: the API server stays up but answers nothing that needs
// storage (its /readyz fails) while etcd is down; it returns once /readyz answers again, and
// starts again in the background every component that gives up.
func (c *Cluster) RestartEtcd(ctx context.Context, down time.Duration) error {
	return c.restart(ctx, "etcd", down)
}

// restart stops the component whose binary is called name, keeps it down for down and starts it
// again (see RestartAPIServer).
func (c *Cluster) restart(ctx context.Context, name string, down time.Duration) error {
	c.gone.Wait()
	pids, err := filepath.Glob(filepath.Join(c.Dir, "kwok", "clusters", c.Name, "pids", "*.pid"))
	if err != nil {
		return err
	}
	var target component
	var others []component
	for _, f := range pids {
		comp, err := readComponent(f)
		if err != nil {
			return err
		}
		if filepath.Base(comp.argv[0]) == name {
			target = comp
		} else {
			others = append(others, comp)
		}
	}
	if target.pid == 0 {
		return fmt.Errorf("no %s among %v", name, pids)
	}
	p, err := os.FindProcess(target.pid)
	if err != nil {
		return err
	}
	_ = p.Signal(syscall.SIGTERM)
	if !waitGone(target.pid, 10*time.Second) {
		_ = p.Signal(syscall.SIGKILL)
		waitGone(target.pid, 5*time.Second)
	}
	stopped := time.Now()
	time.Sleep(down)
	if err := target.start(c.LogsDir()); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	rc := cs.Discovery().RESTClient()
	deadline := time.Now().Add(60 * time.Second)
	for rc.Get().AbsPath("/readyz").Do(ctx).Error() != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready 60s after the restart of %s", name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A component that could not renew its lease exits within its renew deadline (10 s) of its
	// last renewal, made before the component stopped at the latest.
	c.gone.Add(1)
	go func() {
		defer c.gone.Done()
		c.restartGone(others, stopped.Add(12*time.Second))
	}()
	return nil
}

// restartGone starts again each of the components that exits before until.
func (c *Cluster) restartGone(others []component, until time.Time) {
	for {
		for i := range others {
			if others[i].pid != 0 && gone(others[i].pid) {
				c.mu.Lock()
				if !c.down {
					if err := others[i].start(c.LogsDir()); err != nil {
						fmt.Fprintf(c.log, "sim: %v\n", err)
					}
				}
				c.mu.Unlock()
				others[i].pid = 0
			}
		}
		if time.Now().After(until) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitGone waits until pid has exited.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !gone(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// gone: pid has exited (or is a zombie, waiting for its reaper).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat))
	return len(f) > 2 && f[2] == "Z"
}

// ComponentPids are the process ids of the cluster's components (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok-controller) by the base name of their binary,
// for readings of their CPU time and memory.
func (c *Cluster) ComponentPids() (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(c.Dir, "kwok", "clusters", c.Name, "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, f := range files {
		comp, err := readComponent(f)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(comp.argv[0])] = comp.pid
	}
	return out, nil
}
