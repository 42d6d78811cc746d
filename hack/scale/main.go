// Command scale is the side-by-side harness of docs/performance.md: on one simulated cluster it
// measures LeaderWorkerSet alone (the upstream manager, sigs.k8s.io/lws/cmd, with its webhooks)
// and then the real `kubectl-llm operator --lws=embedded` (which hosts the same LWS code) on the
// same cases, and prints each figure with its ratio:
//
//   - recovery: a worker of a group of 3 pods is deleted → its group is recreated and Ready,
//     as the top object (LWS, or ModelServing) reports it;
//   - rollout: 4 groups × 2 pods get a new image → every pod new and Ready, as the top object
//     reports it;
//   - burst: N objects of one size-1 group each, created -rate a second on a fixed schedule (the
//     same arrivals on both sides; LWS alone's Services made by a second client beside them) →
//     each Ready (p50, p99, max), the controller process's CPU per object and RSS after the
//     burst;
//   - the recovery and rollout again, over and over, while the burst is deleted: its first half
//     one object at a time, -delete-rate a second on a fixed schedule, then the rest with its
//     namespace (in the background): one object's work must not wait behind the others'.
//
// Recovery and rollout are repeated -reps times; the table gives the median and the spread.
//
//	go run ./hack/scale -n 100 -reps 5            # both, 100 burst objects
//	go run ./hack/scale -n 300 -nodes 8 -only kubectl-llm
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

func main() {
	n := flag.Int("n", 100, "burst objects")
	reps := flag.Int("reps", 5, "repetitions of the recovery and rollout cases")
	nodes := flag.Int("nodes", 0, "fake nodes (default: enough for the burst, at least 4)")
	only := flag.String("only", "", "run one side only: lws or kubectl-llm")
	flag.StringVar(&firstSide, "first", "lws", "the side that goes first in the first round (lws or kubectl-llm): a round's idle cases run on a cluster the sides before it used (a fresh one for the very first), so which side goes first can tilt those rows")
	flag.StringVar(&churnCPUFile, "churn-cpu", "", "save the operator's CPU profile while half the burst is deleted one at a time to this file (go tool pprof)")
	flag.StringVar(&idleCPUFile, "idle-cpu", "", "save the operator's CPU profile of the idle cases' first 3 s a repetition (about all of them) to this file (go tool pprof)")
	flag.StringVar(&cpuFile, "cpu", "", "save the operator's CPU profile of the burst's first 30 s to this file (go tool pprof)")
	flag.StringVar(&traceFile, "trace", "", "save the operator's execution trace of the burst's first 10 s to this file (go tool trace; -pprof=sched, net or sync for where its goroutines wait)")
	flag.StringVar(&heapFile, "heap", "", "save the operator's heap profile after the burst to this file, and before it to FILE.before (go tool pprof)")
	flag.IntVar(&unrelatedN, "unrelated", 0, "after the churn, create this many unrelated pods, Services, StatefulSets and ControllerRevisions each, and report the controller's RSS before and after")
	flag.IntVar(&getN, "get", 0, "on the kubectl-llm side, time `kubectl llm get` of this many servings against `kubectl get modelservings`")
	flag.BoolVar(&disagg, "disagg", false, "instead of the other cases, roll a 2 prefill : 6 decode topology -reps times by LWS's DisaggregatedSet and by a ModelServing with roles")
	flag.Float64Var(&deleteRate, "delete-rate", 5, "after the burst, its first half is deleted one object at a time, this many a second on a fixed schedule, and the cases are timed while the deletes are made (then the rest goes with its namespace)")
	flag.Float64Var(&burstRate, "rate", 20, "burst objects created a second, on a fixed schedule (each create on its own, up to 64 at once), the same on both sides; 0: one after the other, as fast as one client can")
	flag.BoolVar(&idleOnly, "idle-only", false, "run the idle recovery and rollout alone (no burst, no churn), so that many short rounds (-rounds) alternate the sides: the idle rows' medians then drift less with the cluster's state than over two long rounds")
	flag.BoolVar(&churnOnly, "churn-only", false, "run the burst and the cases while it is deleted, without the idle cases, so that many short rounds (-rounds, with a small -n) alternate the sides: the rows while servings are deleted then drift less with the cluster's state than over two long rounds")
	flag.IntVar(&rounds, "rounds", 1, "measure each side this many times, alternating (A B B A…); figures are pooled (durations) or medians (the rest)")
	flag.IntVar(&singleN, "single", 0, "after the burst, with its objects converged (with -idle-only: in each round, after the idle cases, beside their two objects), create this many more objects one at a time (each Ready before the next) and time each: the operator's own steps apart from a queue")
	flag.BoolVar(&nsContent, "ns-content", false, "while a burst's namespace is deleted, print what it still holds (pods, StatefulSets, LeaderWorkerSets, ModelServings, ControllerRevisions, Services, Events: how many, deleting, with finalizers) each time that changes: seven lists every 200 ms, which load the API server beside the timed cases")
	flag.BoolVar(&keepLogs, "keep", false, "keep the run's directory (the operators' logs and the cluster's components') when it succeeds too")
	flag.StringVar(&rawFile, "raw", "", "save each round's durations of the recovery and rollout cases to this file (JSON), for -pool")
	pool := flag.String("pool", "", "measure nothing: pool the rounds of these -raw files (comma-separated: runs of one build) and print each case with its ratio's interval")
	flag.StringVar(&operatorArgs, "operator-args", "", "extra flags of kubectl-llm operator, space-separated (to try a setting)")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if idleOnly && churnOnly {
		fmt.Fprintln(os.Stderr, "scale: -idle-only and -churn-only each leave out what the other measures: give one of them")
		os.Exit(2)
	}
	if *pool != "" {
		if err := poolRaw(os.Stdout, strings.Split(*pool, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "scale: -pool:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*n, *reps, *nodes, *only); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// side is one of the two things measured: LWS alone, or kubectl-llm.
type side struct {
	name string
	// start runs the controller; it returns its pid and how to stop it.
	start func(ctx context.Context) (int, func(), error)
	// create makes one top object of replicas groups of size pods with an image.
	create func(ctx context.Context, ns, name string, replicas, size int32, image string) error
	// setImage changes the image of a top object.
	// remove deletes a top object as its user would (kubectl delete): for LWS alone the
	// LeaderWorkerSet and the Service beside it, for kubectl-llm the ModelServing.
	remove   func(ctx context.Context, ns, name string) error
	setImage func(ctx context.Context, ns, name, image string) error
	// ready says whether the top object reports every group ready on its current spec.
	ready func(ctx context.Context, ns, name string) (bool, error)
	// watchReady delivers the namespace's top objects as they first report Ready, each with
	// when its watch saw it.
	watchReady func(ctx context.Context, ns string) (<-chan sighting, error)
	// topList is an empty list of the side's top objects, for a watch; topReady is ready's
	// judgement of one object.
	topList  func() client.ObjectList
	topReady func(client.Object) bool
	// metrics reads the controller's Prometheus metrics (nil when it cannot).
	metrics func(ctx context.Context) map[string]float64
	// drain waits for what create left to a second client (LWS alone's Services) to be made
	// (nil when create makes everything itself).
	drain func() error
}

// results of one side.
type results struct {
	recovery, rollout []time.Duration
	// recoveryPhases and rolloutPhases are where each idle recovery's and rollout's time went.
	recoveryPhases, rolloutPhases []phases
	// byObject is the cases while the first half of the burst is deleted one object at a time,
	// -delete-rate a second; byNamespace while the rest goes with its namespace.
	byObject, byNamespace churned
	burst                 []time.Duration
	// toLWS is, per burst object, top object created → its LeaderWorkerSet seen (kubectl-llm
	// only: the operator's own step in); lwsReady is created → the LeaderWorkerSet's status says
	// every group ready (LWS's work, and for kubectl-llm what came before it); fromLWS is that →
	// the top object says Ready (kubectl-llm only: the operator's own step out).
	toLWS, lwsReady, fromLWS []time.Duration
	// toService is, per burst object, created → its Service (the one in front of its leaders)
	// seen by a watch; serviceLate is its LeaderWorkerSet's status Ready → that Service seen, 0
	// when the Service came first: on both sides, how long a group stands ready with no Service
	// in front of it (LWS alone's Services are made by the harness's second client).
	toService, serviceLate []time.Duration
	// fromLWSAndService is, per burst object (kubectl-llm only), the later of its LeaderWorkerSet
	// Ready and its Service seen → the serving Ready: the operator's own step out, apart from the
	// API server's wait to make its Service.
	fromLWSAndService []time.Duration
	// single, singleToLWS and singleFromLWS are the -single case: objects created one at a time
	// while the N burst objects exist, converged (each created → Ready, and the operator's own
	// step in and step out): the operator's latency apart from the burst's queue.
	single, singleToLWS, singleFromLWS []time.Duration
	// singleSeenToLWS is, in the -single case, the serving first seen by a watch → its
	// LeaderWorkerSet first seen by a watch: the step in without the create request's own round
	// trip, both ends seen the way the operator's informers see them.
	singleSeenToLWS []time.Duration
	// singleToPod, singlePodReady and singleToLWSReady are where the rest of a -single object's
	// time goes, each from one watch's first sighting to the next's: its LeaderWorkerSet → its
	// leader pod (LWS's StatefulSet, then the pod), the pod → the pod Ready (scheduler, kwok), the
	// pod Ready → the LeaderWorkerSet's status Ready (LWS's status write).
	singleToPod, singlePodReady, singleToLWSReady []time.Duration
	// requests are the API requests per burst object during the burst, by verb and resource,
	// from the API server's own counters (every client: the controllers, scheduler, kwok…).
	requests map[string]float64
	// apiWait is what the API server says of the burst's requests: the mean latency of a
	// request by verb, and the mean wait in API priority and fairness by priority level.
	apiWait map[string]time.Duration
	// idleWait is the same of the idle cases' requests (the webhooks their pods' creates wait on).
	idleWait map[string]time.Duration
	// idleRequests, idleCPU and idleComponentCPU are what one idle recovery and one idle rollout
	// cost together: the API requests by verb and resource (every client's), the controller's CPU
	// and every other process's.
	idleRequests     map[string]float64
	idleInternals    map[string]float64 // the controllers' passes and queues, per idle recovery and rollout
	idleCPU          time.Duration
	idleComponentCPU map[string]time.Duration
	cpuPerObject     time.Duration
	// createLoop is how long the burst's creates took, the first one's start to the last one's
	// end: the burst's arrival (see -rate).
	createLoop time.Duration
	// internals are the controller's own metrics of the burst (see internals).
	internals map[string]float64
	// componentCPU is the CPU time of each of the cluster's components per burst object.
	componentCPU map[string]time.Duration
	// rssIdle is the controller's RSS before the burst (after the recovery and rollout cases).
	rssIdle float64
	rss     float64
	// rssUnrelated0 and rssUnrelated are the RSS before and after the -unrelated objects.
	rssUnrelated0, rssUnrelated float64
	// notRecreated counts the idle recoveries in which LWS remade only the deleted pod.
	notRecreated int
	// get is the -get case (kubectl-llm only).
	get *getTimes
	// slowest is the burst object that took longest, and when it was created and how long.
	slowest   string
	slowestAt timing
}

// churned is what the cases measured while part of the burst was deleted.
type churned struct {
	recovery, rollout             []time.Duration
	recoveryPhases, rolloutPhases []phases
	// deletion is how long that part took to go: the first delete → its last pod gone (one per
	// round).
	deletion []time.Duration
	// namespaceGone is, for the part deleted with its namespace, the namespace's delete → the
	// namespace gone (the namespace controller's last look; one per round).
	namespaceGone []time.Duration
	// namespaceWhere is, beside each of namespaceGone, where that deletion went: the namespace
	// controller's passes and the slow collections in them (see describePasses).
	namespaceWhere []string
	// cpu, componentCPU and internals are the controller's CPU, every process's, and the
	// controller's own metrics from the first delete until that part is gone, per deleted object
	// (with the cases timed beside it).
	cpu          time.Duration
	componentCPU map[string]time.Duration
	internals    map[string]float64
	// busy is the share of the machine's CPU time (every core, every process: the cluster's, the
	// controller's, the harness's) that was busy over the same span (since session 37): how near
	// the machine is to saturation while the cases are timed.
	busy float64
	// apiWait is what the API server says of every request meanwhile (see apiWaits): whether
	// the cases' pods wait on an admission webhook of the controller's, say.
	apiWait map[string]time.Duration
	// notRecreated counts the recoveries in which LWS remade only the deleted pod (see
	// errNotRecreated): not timed.
	notRecreated int
	// requests are the API requests per deleted object meanwhile, by verb and resource (every
	// client's, the harness's deletes and the cases' too).
	requests map[string]float64
}

// merge pools the rounds: durations side by side, CPU as the median, the metrics as the mean.
func (c *churned) merge(rs []churned) {
	c.componentCPU, c.internals, c.apiWait = map[string]time.Duration{}, map[string]float64{}, map[string]time.Duration{}
	c.requests = map[string]float64{}
	var cpu []time.Duration
	var busy []float64
	for _, r := range rs {
		busy = append(busy, r.busy)
		for k, v := range r.requests {
			c.requests[k] += v / float64(len(rs))
		}
		for k, v := range r.apiWait {
			c.apiWait[k] += v / time.Duration(len(rs))
		}
		c.recovery, c.rollout = append(c.recovery, r.recovery...), append(c.rollout, r.rollout...)
		c.recoveryPhases = append(c.recoveryPhases, r.recoveryPhases...)
		c.rolloutPhases = append(c.rolloutPhases, r.rolloutPhases...)
		c.deletion = append(c.deletion, r.deletion...)
		c.namespaceGone = append(c.namespaceGone, r.namespaceGone...)
		c.namespaceWhere = append(c.namespaceWhere, r.namespaceWhere...)
		c.notRecreated += r.notRecreated
		cpu = append(cpu, r.cpu)
		for k, v := range r.internals {
			c.internals[k] += v / float64(len(rs))
		}
	}
	c.cpu = median(cpu)
	c.busy = medianOf(busy)
	for _, name := range components {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, r.componentCPU[name])
		}
		c.componentCPU[name] = median(ds)
	}
}

type timing struct {
	created time.Time
	d       time.Duration
}

// trace prints when each object of one burst object's pipeline appeared, in seconds after the
// object was created (the API's timestamps have whole seconds): where its time went.
// notReady prints, on stderr, what the namespace's top objects that are not Ready say, counted by
// what they say, and the controller's work queues: why a burst did not come up in time.
func notReady(ctx context.Context, s side, ns string) {
	list := s.topList()
	if err := kc.List(ctx, list, client.InNamespace(ns)); err != nil {
		fmt.Fprintln(os.Stderr, "list what is not Ready:", err)
		return
	}
	says := map[string]int{}
	digits := regexp.MustCompile(`[0-9]+`)
	items, _ := meta.ExtractList(list)
	for _, o := range items {
		obj := o.(client.Object)
		if s.topReady(obj) {
			continue
		}
		var what string
		switch x := obj.(type) {
		case *v1.ModelServing:
			what = string(x.Status.Phase)
			if c := meta.FindStatusCondition(x.Status.Conditions, v1.ConditionProgressing); c != nil {
				what += " " + c.Reason + ": " + c.Message
			}
		case *lwsv1.LeaderWorkerSet:
			for _, c := range x.Status.Conditions {
				if c.Status == metav1.ConditionTrue {
					what += c.Type + " " + c.Reason + "; "
				}
			}
		}
		says[digits.ReplaceAllString(what, "N")]++
	}
	for what, count := range says {
		fmt.Fprintf(os.Stderr, "%s: %d not Ready say %q\n", s.name, count, what)
	}
	for k, v := range s.metrics(ctx) {
		if strings.HasPrefix(k, "workqueue_depth") && v > 0 {
			fmt.Fprintf(os.Stderr, "%s: %s %v\n", s.name, k, v)
		}
	}
}

func trace(ctx context.Context, ns, name string, t timing) {
	at := func(ts metav1.Time) string {
		return fmt.Sprintf("%+.0fs", ts.Sub(t.created.Truncate(time.Second)).Seconds())
	}
	line := []string{"trace of the slowest, " + name + ":"}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lws); err == nil {
		line = append(line, "LeaderWorkerSet "+at(lws.CreationTimestamp))
	}
	sts := &appsv1.StatefulSet{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts); err == nil {
		line = append(line, "StatefulSet "+at(sts.CreationTimestamp))
	}
	pod := &corev1.Pod{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-0"}, pod); err == nil {
		line = append(line, "pod "+at(pod.CreationTimestamp))
		for _, c := range pod.Status.Conditions {
			line = append(line, string(c.Type)+" "+at(c.LastTransitionTime))
		}
	}
	line = append(line, fmt.Sprintf("Ready seen %.1fs", t.d.Seconds()))
	fmt.Fprintln(os.Stderr, strings.Join(line, "  "))
}

var (
	// builtFrom is the commit the operator was built from (see gitBuild), for -raw.
	operatorArgs, heapFile, cpuFile, traceFile, churnCPUFile, idleCPUFile, rawFile, builtFrom string
	keepLogs                                                                                  bool
	// nsContent is -ns-content: where a namespace's deletion waits, by what it still holds.
	nsContent bool
	// unrelatedN and getN are the -unrelated and -get cases (0: not run).
	unrelatedN, getN, singleN int
	disagg, idleOnly          bool
	// churnOnly is -churn-only: the burst and the churn, not the idle cases.
	churnOnly bool
	// burstRate is how many burst objects are created a second (0: one after the other, as fast
	// as one client can).
	burstRate float64
	// deleteRate is how many of the burst's first half are deleted a second, one at a time.
	deleteRate float64
	// firstSide is the side that goes first in the first round (-first).
	firstSide string
	// rounds is how many times each side is measured, in the order A B B A A B…, so that the
	// load of the machine drifting during a run weighs on both sides alike.
	rounds int
	// llmBin and kubeconfig are the kubectl-llm binary under test and the cluster's kubeconfig.
	llmBin, kubeconfig string
	// cluster is the simulated cluster both sides run on.
	cluster *sim.Cluster
	// operatorPprof is the pprof address of the operator under test when -heap is given.
	operatorPprof string
	// operatorMetrics is the metrics address of the operator under test.
	operatorMetrics string
	kc              client.WithWatch
	kube            *kubernetes.Clientset
)

func run(n, reps, nodes int, only string) (err error) {
	ctx := context.Background()
	root := testenv.RepoRoot()
	dir, err := os.MkdirTemp("", "kubectl-llm-scale-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil || keepLogs {
			fmt.Fprintf(os.Stderr, "scale: the logs are kept in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	bin := filepath.Join(dir, "kubectl-llm")
	llmBin = bin
	// As the release builds it (.goreleaser.yaml), and as hack/build-lws-manager.sh builds the
	// upstream manager: a default cgo build links kubectl-llm dynamically, with every symbol
	// exported (cli-runtime reaches kustomize, which imports package plugin), 12 MiB more of the
	// binary's pages resident.
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/kubectl-llm")
	build.Dir, build.Stderr, build.Env = root, os.Stderr, append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return err
	}
	builtFrom = gitBuild(root)
	if nodes <= 0 {
		nodes = max(4, n/100+2)
	}
	if cluster, err = sim.StartWith(ctx, sim.Options{Nodes: nodes}); err != nil {
		return err
	}
	defer func() {
		if err != nil || keepLogs {
			// The cluster's components' logs (the StatefulSet controller's, the namespace
			// controller's among them) go with the operators' into the directory kept.
			if cerr := exec.Command("cp", "-r", cluster.LogsDir(), filepath.Join(dir, "cluster-logs")).Run(); cerr != nil {
				fmt.Fprintf(os.Stderr, "scale: the cluster's logs were not kept: %v\n", cerr)
			}
		}
		cluster.Stop()
	}()
	kubeconfig = cluster.Kubeconfig
	cfg := cluster.Config
	cfg.QPS, cfg.Burst = 200, 400
	if kc, err = client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return err
	}
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	// The install's CRDs, ServiceAccount, roles and (empty) webhook configurations, for both sides:
	// LWS alone gets the LeaderWorkerSet the operator makes of a ModelServing defaulted by the API
	// server, and the operator runs as that ServiceAccount, as in a cluster.
	if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
		return err
	}
	if disagg {
		return runDisagg(ctx, cluster, bin, dir, reps, os.Stdout)
	}
	sides := []side{lwsAlone(cluster, dir), kubectlLLM(cluster, bin, dir)}
	switch firstSide {
	case "lws":
	case "kubectl-llm":
		sides[0], sides[1] = sides[1], sides[0]
	default:
		return fmt.Errorf("-first %q: want lws or kubectl-llm", firstSide)
	}
	got := map[string][]*results{}
	for round := 0; round < rounds; round++ {
		for _, s := range roundOrder(sides, round) {
			if only != "" && only != s.name {
				continue
			}
			fmt.Fprintf(os.Stderr, "== %s, round %d of %d\n", s.name, round+1, rounds)
			r, err := measure(ctx, s, n, reps)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			got[s.name] = append(got[s.name], r)
		}
	}
	printTable(os.Stdout, n, reps, nodes, got["lws"], got["kubectl-llm"])
	if rawFile != "" {
		return writeRaw(rawFile, got)
	}
	return nil
}

func measure(ctx context.Context, s side, n, reps int) (*results, error) {
	pid, stop, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	time.Sleep(2 * time.Second) // the caches settle
	r := &results{}
	ns := newNamespace(ctx, s.name+"-cases")
	if err := s.create(ctx, ns, "rec", 1, 3, "engine:v1"); err != nil {
		return nil, err
	}
	if err := s.create(ctx, ns, "roll", 4, 2, "engine:v1"); err != nil {
		return nil, err
	}
	for _, name := range []string{"rec", "roll"} {
		if _, err := until(ctx, 2*time.Minute, func() (bool, error) { return s.ready(ctx, ns, name) }); err != nil {
			return nil, fmt.Errorf("%s not ready: %w", name, err)
		}
	}
	image := 1
	if !churnOnly {
		if err := idleCases(ctx, s, r, pid, ns, reps, &image); err != nil {
			return nil, err
		}
	}

	if r.rssIdle, err = rssMiB(pid); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "%s RSS before the burst: %s (%s)\n", s.name, rssParts(pid), rssByMapping(pid))
	if idleOnly {
		if singleN > 0 {
			if err := oneAtATimeIdle(ctx, s, r, ns); err != nil {
				return nil, err
			}
		}
		deleteNamespace(ctx, ns)
		return r, nil
	}
	if s.name == "kubectl-llm" && heapFile != "" {
		// The heap before the burst too (FILE.before): what the operator holds converged and idle.
		if out, err := exec.Command("curl", "-sf", "-o", heapFile+".before", "http://"+operatorPprof+"/debug/pprof/heap?gc=1").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("heap profile before the burst: %v %s", err, out)
		}
	}
	burstNS := newNamespace(ctx, s.name+"-burst")
	readyCh, lwsSeen, lwsReadySeen, err := readyWatches(ctx, s, burstNS)
	if err != nil {
		return nil, err
	}
	svcSeen, err := firstSeen(ctx, &corev1.ServiceList{}, burstNS, func(client.Object) bool { return true })
	if err != nil {
		return nil, err
	}
	var held *lastWords
	if s.name == "kubectl-llm" {
		if held, err = watchLastWords(ctx, burstNS); err != nil {
			return nil, err
		}
	}
	req0, err := apiRequests(ctx)
	if err != nil {
		return nil, err
	}
	lat0, err := apiServerSeries(ctx)
	if err != nil {
		return nil, err
	}
	prom0 := s.metrics(ctx)
	peaks := sampleHeap(ctx, s.metrics, 2*time.Second)
	defer peaks.stop()
	var profiling []*exec.Cmd
	if s.name == "kubectl-llm" {
		for _, p := range []struct{ file, path string }{
			{cpuFile, "/debug/pprof/profile?seconds=30"},
			{traceFile, "/debug/pprof/trace?seconds=10"},
		} {
			if p.file == "" {
				continue
			}
			c := exec.Command("curl", "-sf", "-o", p.file, "http://"+operatorPprof+p.path)
			if err := c.Start(); err != nil {
				return nil, err
			}
			profiling = append(profiling, c)
		}
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	comp0 := componentCPU()
	created := make(map[string]time.Time, n)
	createdAt := make(map[string]time.Time, n)
	readyAt := make(map[string]time.Time, n)
	loopStart := time.Now()
	var creating sync.WaitGroup
	var createErr error
	var createMu sync.Mutex
	inFlight := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%04d", i)
		if burstRate > 0 {
			// An open loop: object i is created at i/rate after the first, whatever the ones
			// before it wait for, so that both sides get the same arrivals.
			time.Sleep(time.Until(loopStart.Add(time.Duration(float64(i) * float64(time.Second) / burstRate))))
			inFlight <- struct{}{}
		}
		created[name] = time.Now()
		createdAt[name] = created[name]
		if burstRate == 0 {
			if err := s.create(ctx, burstNS, name, 1, 1, "engine:v1"); err != nil {
				return nil, err
			}
			continue
		}
		creating.Go(func() {
			defer func() { <-inFlight }()
			if err := s.create(ctx, burstNS, name, 1, 1, "engine:v1"); err != nil {
				createMu.Lock()
				createErr = cmp.Or(createErr, err)
				createMu.Unlock()
			}
		})
	}
	creating.Wait()
	if createErr != nil {
		return nil, createErr
	}
	r.createLoop = time.Since(loopStart)
	deadline := time.After(time.Duration(n)*time.Second + 2*time.Minute)
	for len(r.burst) < n {
		select {
		case got := <-readyCh:
			// got.at, not now: this loop reads the channel only once every object is created
			// (a minute and a half for 1000 under load), and the first ones were Ready long before.
			name := got.name
			if t, ok := created[name]; ok {
				readyAt[name] = got.at
				d := got.at.Sub(t)
				r.burst = append(r.burst, d)
				if d > r.slowestAt.d {
					r.slowest, r.slowestAt = name, timing{t, d}
				}
				delete(created, name)
			}
		case <-deadline:
			notReady(ctx, s, burstNS)
			return nil, fmt.Errorf("burst of %d: only %d Ready in time", n, len(r.burst))
		}
	}
	if s.drain != nil {
		if err := s.drain(); err != nil {
			return nil, fmt.Errorf("burst: %w", err)
		}
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	r.componentCPU = componentCPUSince(comp0, n)
	req1, err := apiRequests(ctx)
	if err != nil {
		return nil, err
	}
	r.requests = perObject(req0, req1, n)
	lat1, err := apiServerSeries(ctx)
	if err != nil {
		return nil, err
	}
	r.apiWait = apiWaits(lat0, lat1)
	r.internals = internals(prom0, s.metrics(ctx), n)
	peaks.end(r.internals)
	if s.name == "kubectl-llm" {
		for _, c := range profiling {
			if err := c.Wait(); err != nil {
				return nil, fmt.Errorf("profile %s: %w", c.Args[len(c.Args)-1], err)
			}
		}
		if heapFile != "" {
			if out, err := exec.Command("curl", "-sf", "-o", heapFile, "http://"+operatorPprof+"/debug/pprof/heap?gc=1").CombinedOutput(); err != nil {
				return nil, fmt.Errorf("heap profile: %v %s", err, out)
			}
		}
	}
	trace(ctx, burstNS, r.slowest, r.slowestAt)
	r.cpuPerObject = (cpu1 - cpu0) / time.Duration(n)
	type stepOut struct {
		name string
		d    time.Duration
	}
	var outs []stepOut
	// Every Service is made by now (LWS alone's: drained above); its watch may trail a moment.
	_, _ = until(ctx, 10*time.Second, func() (bool, error) {
		for name := range createdAt {
			if _, ok := svcSeen.at(naming.ServiceName(name)); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	for name, t0 := range createdAt {
		tl, tr, err := lwsTimes(ctx, name, lwsSeen, lwsReadySeen)
		if err != nil {
			return nil, fmt.Errorf("burst object %w", err)
		}
		r.lwsReady = append(r.lwsReady, tr.Sub(t0))
		ts, svcOK := svcSeen.at(naming.ServiceName(name))
		if svcOK {
			r.toService = append(r.toService, ts.Sub(t0))
			r.serviceLate = append(r.serviceLate, max(0, ts.Sub(tr)))
		}
		if s.name == "kubectl-llm" && svcOK {
			r.fromLWSAndService = append(r.fromLWSAndService, max(0, readyAt[name].Sub(later(tr, ts))))
		}
		if s.name == "kubectl-llm" {
			r.toLWS = append(r.toLWS, tl.Sub(t0))
			r.fromLWS = append(r.fromLWS, max(0, readyAt[name].Sub(tr)))
			outs = append(outs, stepOut{name, readyAt[name].Sub(tr)})
		}
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].d > outs[j].d })
	for _, o := range outs[:min(3, len(outs))] {
		fmt.Fprintf(os.Stderr, "step out of %s: Ready (%s) %.1fs after its LeaderWorkerSet; what its status said last before: %s\n",
			o.name, readyAt[o.name].Format("15:04:05.0"), o.d.Seconds(), held.of(o.name))
	}
	if r.rss, err = rssMiB(pid); err != nil {
		return nil, err
	}
	if r.internals != nil {
		r.internals["rss anon"], r.internals["rss file"] = rssKinds(pid)
		if hwm, err := peakRSSMiB(pid); err == nil {
			r.internals["rss peak"] = hwm
		}
	}
	fmt.Fprintf(os.Stderr, "%s RSS after the burst: %s (%s)\n", s.name, rssParts(pid), rssByMapping(pid))
	if singleN > 0 {
		if err := oneAtATime(ctx, s, r, burstNS, readyCh, lwsSeen, lwsReadySeen); err != nil {
			return nil, err
		}
		if s.drain != nil {
			if err := s.drain(); err != nil {
				return nil, fmt.Errorf("one at a time: %w", err)
			}
		}
	}

	if err := churn(ctx, s, r, pid, n, ns, burstNS, &image); err != nil {
		return nil, err
	}
	if unrelatedN > 0 {
		if r.rssUnrelated0, r.rssUnrelated, err = measureUnrelated(ctx, pid, unrelatedN); err != nil {
			return nil, err
		}
	}
	if getN > 0 && s.name == "kubectl-llm" {
		if r.get, err = measureGet(ctx, llmBin, kubeconfig, getN, 5); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{ns, burstNS} {
		deleteNamespace(ctx, name)
	}
	return r, nil
}

// idleCases times reps recoveries of ns/rec and as many rollouts of ns/roll, with nothing else
// going on, and what they cost (CPU, requests, the controllers' passes and queues), into r.
func idleCases(ctx context.Context, s side, r *results, pid int, ns string, reps int, image *int) error {
	idle0, err := apiServerSeries(ctx)
	if err != nil {
		return err
	}
	idleReq0, err := apiRequests(ctx)
	if err != nil {
		return err
	}
	idleCPU0, err := cpuTime(pid)
	if err != nil {
		return err
	}
	idleComp0 := componentCPU()
	idleProm0 := s.metrics(ctx)
	profiled, err := cpuProfile(s, idleCPUFile, 3*reps)
	if err != nil {
		return err
	}
	for i := 0; i < reps; i++ {
		d, ph, err := recovery(ctx, s, ns, "rec")
		switch {
		case errors.Is(err, errNotRecreated):
			fmt.Fprintf(os.Stderr, "%s: idle recovery %d: %v\n", s.name, i+1, err)
			r.notRecreated++
		case err != nil:
			return fmt.Errorf("recovery %d: %w", i+1, err)
		default:
			r.recovery, r.recoveryPhases = append(r.recovery, d), append(r.recoveryPhases, ph)
		}
		*image++
		d, ph, err = rollout(ctx, s, ns, "roll", fmt.Sprintf("engine:v%d", *image))
		if err != nil {
			return fmt.Errorf("rollout %d: %w", i+1, err)
		}
		r.rollout, r.rolloutPhases = append(r.rollout, d), append(r.rolloutPhases, ph)
	}
	if err := profiled(); err != nil {
		return err
	}
	idleCPU1, err := cpuTime(pid)
	if err != nil {
		return err
	}
	r.idleCPU = (idleCPU1 - idleCPU0) / time.Duration(reps)
	r.idleComponentCPU = componentCPUSince(idleComp0, reps)
	r.idleInternals = internals(idleProm0, s.metrics(ctx), reps)
	idleReq1, err := apiRequests(ctx)
	if err != nil {
		return err
	}
	r.idleRequests = perObject(idleReq0, idleReq1, reps)
	idle1, err := apiServerSeries(ctx)
	if err != nil {
		return err
	}
	r.idleWait = apiWaits(idle0, idle1)
	fmt.Fprintf(os.Stderr, "%s: idle cases of this round: recovery %s, rollout %s (median [min–max])\n", s.name, spreadOf(r.recovery), spreadOf(r.rollout))
	return nil
}

// maxChurnPairs bounds the recoveries and rollouts timed while part of a burst is deleted.
const maxChurnPairs = 60

// churn deletes the burst while one object recovers and another rolls out: its first half one
// object at a time, -delete-rate a second on a fixed schedule (the same arrivals on both sides, as
// the burst's creates), then the rest with its namespace (the namespace controller and the garbage
// collector delete everything at once, at their own pace).
func churn(ctx context.Context, s side, r *results, pid, n int, ns, burstNS string, image *int) error {
	half := n / 2
	names := make([]string, half)
	for i := range names {
		names[i] = fmt.Sprintf("m%04d", i)
	}
	gone, err := labels.NewRequirement(lwsv1.SetNameLabelKey, selection.In, names)
	if err != nil {
		return err
	}
	var deleteErr error // written before deleted is closed
	deleted := make(chan struct{})
	byObject := func() error {
		go func() {
			defer close(deleted)
			deleteErr = onSchedule(len(names), deleteRate, func(i int) error { return s.remove(ctx, burstNS, names[i]) })
		}()
		return nil
	}
	halfGone := func() (bool, error) {
		select {
		case <-deleted:
			if deleteErr != nil {
				return false, deleteErr
			}
		default:
			return false, nil
		}
		// Its pods are the last of an object to go (the garbage collector deletes them after
		// their StatefulSet, after its LeaderWorkerSet).
		var pods corev1.PodList
		err := kc.List(ctx, &pods, client.InNamespace(burstNS), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*gone)}, client.Limit(1))
		return len(pods.Items) == 0, err
	}
	// The cases count while the deletes are being made: the same window on both sides, long enough
	// (-delete-rate 5 makes it 30 s for 150) that the work a delete leaves to the garbage
	// collector, seconds after it (once 12 s after the last of 20 of LWS alone's, 10 a second),
	// falls into it too, as it would under a steady churn. Until the last pod is gone instead,
	// one side's cases ran beside a slow tail of the garbage collector, the other's beside the
	// deletes themselves.
	profiled, err := cpuProfile(s, churnCPUFile, max(1, int(float64(half)/deleteRate)))
	if err != nil {
		return err
	}
	if r.byObject, err = timedThrough(ctx, s, pid, half, ns, image, byObject, deleted, halfGone); err != nil {
		return fmt.Errorf("while deleted one at a time: %w", err)
	}
	if err := profiled(); err != nil {
		return err
	}
	var nsDeleted time.Time
	byNamespace := func() error {
		nsDeleted = time.Now()
		return kc.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: burstNS}})
	}
	said := namespaceSays(ctx, s.name, burstNS)
	if r.byNamespace, err = timedThrough(ctx, s, pid, n-half, ns, image, byNamespace, nil, func() (bool, error) {
		said()
		return burstGone(ctx, burstNS)
	}); err != nil {
		return fmt.Errorf("while deleted with the namespace: %w", err)
	}
	if _, err := until(ctx, 5*time.Minute, func() (bool, error) {
		said()
		err := kc.Get(ctx, client.ObjectKey{Name: burstNS}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("the namespace %s not gone: %w", burstNS, err)
	}
	r.byNamespace.namespaceGone = []time.Duration{time.Since(nsDeleted)}
	r.byNamespace.namespaceWhere = []string{namespaceControllerSaid(burstNS, nsDeleted)}
	fmt.Fprintf(os.Stderr, "%s: namespace %s gone %.1fs after its delete; the namespace controller on it: %s\n",
		s.name, burstNS, time.Since(nsDeleted).Seconds(), r.byNamespace.namespaceWhere[0])
	return nil
}

// namespaceSays returns a function that prints (on stderr) what the namespace's conditions say
// each time it changes, with the time since the first call: where a namespace's deletion waits
// (its pods, content with finalizers, a failed deletion and the namespace controller's backoff).
func namespaceSays(ctx context.Context, side, name string) func() {
	var start time.Time
	last := "-" // no state yet: the first one is printed
	return func() {
		if start.IsZero() {
			start = time.Now()
		}
		nsObj := &corev1.Namespace{}
		if err := kc.Get(ctx, client.ObjectKey{Name: name}, nsObj); err != nil {
			return
		}
		var says []string
		for _, c := range nsObj.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				says = append(says, string(c.Type)+": "+c.Message)
			}
		}
		now := cmp.Or(strings.Join(says, "; "), "no condition true")
		if nsContent {
			now += "; " + namespaceContent(ctx, name)
		}
		if now != last {
			last = now
			fmt.Fprintf(os.Stderr, "%s: namespace %s at +%.1fs: %s\n", side, name, time.Since(start).Seconds(), now)
		}
	}
}

// namespaceContent says what a namespace still holds of the kinds a serving is made of (-ns-content):
// how many of each, how many of them are being deleted, and how many carry finalizers.
func namespaceContent(ctx context.Context, ns string) string {
	kinds := []struct {
		name string
		gvk  schema.GroupVersionKind
	}{
		{"pods", corev1.SchemeGroupVersion.WithKind("PodList")},
		{"StatefulSets", appsv1.SchemeGroupVersion.WithKind("StatefulSetList")},
		{"LeaderWorkerSets", lwsv1.GroupVersion.WithKind("LeaderWorkerSetList")},
		{"ModelServings", v1.GroupVersion.WithKind("ModelServingList")},
		{"ControllerRevisions", appsv1.SchemeGroupVersion.WithKind("ControllerRevisionList")},
		{"Services", corev1.SchemeGroupVersion.WithKind("ServiceList")},
		{"Events", corev1.SchemeGroupVersion.WithKind("EventList")},
	}
	var parts []string
	for _, k := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk)
		if err := kc.List(ctx, list, client.InNamespace(ns)); err != nil {
			parts = append(parts, k.name+" "+err.Error())
			continue
		}
		if part := kindContent(k.name, list.Items); part != "" {
			parts = append(parts, part)
		}
	}
	return "holds " + cmp.Or(strings.Join(parts, ", "), "nothing of these kinds")
}

// kindContent says how many objects of a kind there are, how many of them are being deleted and
// how many carry finalizers; "" for none.
func kindContent(kind string, items []metav1.PartialObjectMetadata) string {
	if len(items) == 0 {
		return ""
	}
	var deleting, finalizers int
	for _, o := range items {
		if !o.DeletionTimestamp.IsZero() {
			deleting++
		}
		if len(o.Finalizers) > 0 {
			finalizers++
		}
	}
	return fmt.Sprintf("%s %d (deleting %d, with finalizers %d)", kind, len(items), deleting, finalizers)
}

// onSchedule calls do(i) for i < n, the i-th at i/rate after the first, up to 64 at once, and
// returns the first error.
func onSchedule(n int, rate float64, do func(i int) error) error {
	start := time.Now()
	inFlight := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(float64(i) * float64(time.Second) / rate))))
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			if err := do(i); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// timedThrough starts a deletion of objects burst objects and, while it goes, times one object's
// recovery and another's rollout in turn, over and over, until window is closed, or (window nil)
// until gone says the deletion is done (looked at every 200 ms): a case counts when it ended
// before that. It returns once gone says so. Until session 19 the harness timed -reps
// pairs from the namespace's delete on, so how many of them fell into the deletion, and at which
// point of it, differed from run to run and from side to side: a recovery while 300 were deleted
// measured 1.27× and 1.77× of LWS alone in two runs of the same build.
//
// It also measures the deletion's cost while the cases run beside it (their own work is in it
// too, a small part): each process's CPU and the controller's queues, per deleted object.
func timedThrough(ctx context.Context, s side, pid, objects int, ns string, image *int, start func() error, window <-chan struct{}, gone func() (bool, error)) (churned, error) {
	var c churned
	prom0, comp0, machine0 := s.metrics(ctx), componentCPU(), readMachineTicks()
	cpu0, err := cpuTime(pid)
	if err != nil {
		return c, err
	}
	lat0, err := apiServerSeries(ctx)
	if err != nil {
		return c, err
	}
	req0, err := apiRequests(ctx)
	if err != nil {
		return c, err
	}
	deleting := time.Now()
	if err := start(); err != nil {
		return c, err
	}
	emptied := make(chan struct{})
	var emptiedErr error
	go func() {
		defer close(emptied)
		// Every 200 ms (a list of one item or two): until's 50 ms would add requests of its own
		// to the load the cases are timed under.
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(15 * time.Minute)
		for {
			done, err := gone()
			if err != nil || done {
				emptiedErr = err
				c.deletion = append(c.deletion, time.Since(deleting))
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				emptiedErr = fmt.Errorf("not gone after 15m")
				return
			case <-ctx.Done():
				emptiedErr = ctx.Err()
				return
			}
		}
	}()
	if window == nil {
		window = emptied
	}
	during := func() bool {
		select {
		case <-window:
			return false
		default:
			return true
		}
	}
	for i := 0; i < maxChurnPairs && during(); i++ {
		d, ph, err := recovery(ctx, s, ns, "rec")
		notRecreated := errors.Is(err, errNotRecreated)
		if err != nil && !notRecreated {
			return c, fmt.Errorf("recovery %d: %w", i+1, err)
		}
		if !during() {
			break
		}
		if notRecreated {
			fmt.Fprintf(os.Stderr, "%s: recovery %d meanwhile: %v\n", s.name, i+1, err)
			c.notRecreated++
		} else {
			c.recovery, c.recoveryPhases = append(c.recovery, d), append(c.recoveryPhases, ph)
		}
		*image++
		d, ph, err = rollout(ctx, s, ns, "roll", fmt.Sprintf("engine:v%d", *image))
		if err != nil {
			return c, fmt.Errorf("rollout %d: %w", i+1, err)
		}
		if !during() {
			break
		}
		c.rollout, c.rolloutPhases = append(c.rollout, d), append(c.rolloutPhases, ph)
	}
	<-emptied
	if emptiedErr != nil {
		return c, fmt.Errorf("the deletion: %w", emptiedErr)
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return c, err
	}
	c.cpu = (cpu1 - cpu0) / time.Duration(objects)
	c.busy = busySince(machine0, readMachineTicks())
	c.componentCPU = componentCPUSince(comp0, objects)
	c.internals = internals(prom0, s.metrics(ctx), objects)
	lat1, err := apiServerSeries(ctx)
	if err != nil {
		return c, err
	}
	c.apiWait = apiWaits(lat0, lat1)
	req1, err := apiRequests(ctx)
	if err != nil {
		return c, err
	}
	c.requests = perObject(req0, req1, objects)
	return c, nil
}

// burstGone says whether the burst's namespace holds no pod and no LeaderWorkerSet any more (its
// ModelServings, Services and revisions go with them; the namespace itself goes a little later,
// when the namespace controller looks again).
func burstGone(ctx context.Context, ns string) (bool, error) {
	for _, l := range []client.ObjectList{&corev1.PodList{}, &lwsv1.LeaderWorkerSetList{}} {
		if err := kc.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
			return false, err
		}
		if meta.LenList(l) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// oneAtATime is the -single case: singleN objects created one at a time among the converged burst
// objects, each after the previous one is Ready and a quiet second, so that the operator's queue
// is empty when it comes: what is left is the operator's own latency (and LWS's, the same on both
// sides).
func oneAtATime(ctx context.Context, s side, r *results, ns string, readyCh <-chan sighting, lwsSeen, lwsReadySeen *seen) error {
	var servingSeen *seen
	if s.name == "kubectl-llm" {
		var err error
		if servingSeen, err = firstSeen(ctx, &v1.ModelServingList{}, ns, func(client.Object) bool { return true }); err != nil {
			return err
		}
	}
	podSeen, err := firstSeen(ctx, &corev1.PodList{}, ns, func(client.Object) bool { return true })
	if err != nil {
		return err
	}
	podReadySeen, err := firstSeen(ctx, &corev1.PodList{}, ns, func(o client.Object) bool { return podReady(o.(*corev1.Pod)) })
	if err != nil {
		return err
	}
	for i := 0; i < singleN; i++ {
		time.Sleep(time.Second)
		name := fmt.Sprintf("s%04d", i)
		t0 := time.Now()
		if err := s.create(ctx, ns, name, 1, 1, "engine:v1"); err != nil {
			return err
		}
		var readyAt time.Time
		timeout := time.After(2 * time.Minute)
		for readyAt.IsZero() {
			select {
			case got := <-readyCh:
				if got.name == name {
					readyAt = got.at
				}
			case <-timeout:
				return fmt.Errorf("single object %s not Ready in 2 minutes", name)
			}
		}
		r.single = append(r.single, readyAt.Sub(t0))
		tl, tr, err := lwsTimes(ctx, name, lwsSeen, lwsReadySeen)
		if err != nil {
			return fmt.Errorf("single object %w", err)
		}
		// The leader pod's sightings come before the LeaderWorkerSet's Ready, which was seen.
		if tp, ok := podSeen.at(name + "-0"); ok {
			if tpr, ok := podReadySeen.at(name + "-0"); ok {
				r.singleToPod = append(r.singleToPod, max(0, tp.Sub(tl)))
				r.singlePodReady = append(r.singlePodReady, max(0, tpr.Sub(tp)))
				r.singleToLWSReady = append(r.singleToLWSReady, max(0, tr.Sub(tpr)))
			}
		}
		if s.name == "kubectl-llm" {
			r.singleToLWS = append(r.singleToLWS, tl.Sub(t0))
			r.singleFromLWS = append(r.singleFromLWS, max(0, readyAt.Sub(tr)))
			if ts, ok := servingSeen.at(name); ok {
				r.singleSeenToLWS = append(r.singleSeenToLWS, max(0, tl.Sub(ts)))
			}
		}
	}
	return nil
}

// oneAtATimeIdle is the -single case of an -idle-only round: the objects created one at a time in
// the idle cases' namespace, beside its two converged objects, once the idle cases are done. Each
// round times them, so that the sides alternate as they do for the idle cases, where two long
// rounds of the burst's -single case drift with the cluster's state.
func oneAtATimeIdle(ctx context.Context, s side, r *results, ns string) error {
	ctx, cancel := context.WithCancel(ctx) // the watches end with the case
	defer cancel()
	readyCh, lwsSeen, lwsReadySeen, err := readyWatches(ctx, s, ns)
	if err != nil {
		return err
	}
	if err := oneAtATime(ctx, s, r, ns, readyCh, lwsSeen, lwsReadySeen); err != nil {
		return err
	}
	if s.drain != nil {
		if err := s.drain(); err != nil {
			return fmt.Errorf("one at a time: %w", err)
		}
	}
	return nil
}

// readyWatches are the watches that time a namespace's objects: its top objects as they first
// report Ready, and its LeaderWorkerSets as they are first seen and first seen Ready.
func readyWatches(ctx context.Context, s side, ns string) (readyCh <-chan sighting, lwsSeen, lwsReadySeen *seen, err error) {
	if readyCh, err = s.watchReady(ctx, ns); err != nil {
		return nil, nil, nil, err
	}
	if lwsSeen, err = firstSeen(ctx, &lwsv1.LeaderWorkerSetList{}, ns, func(client.Object) bool { return true }); err != nil {
		return nil, nil, nil, err
	}
	lwsReadySeen, err = firstSeen(ctx, &lwsv1.LeaderWorkerSetList{}, ns, func(o client.Object) bool { return lwsReady(o.(*lwsv1.LeaderWorkerSet)) })
	return readyCh, lwsSeen, lwsReadySeen, err
}

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lwsTimes is when the watches first saw the object's LeaderWorkerSet, and saw it Ready. The top
// object may say Ready a moment before the watch of its LWS delivers the same: it waits 10 s.
func lwsTimes(ctx context.Context, name string, lwsSeen, lwsReadySeen *seen) (seenAt, readyAt time.Time, err error) {
	var okL, okR bool
	_, _ = until(ctx, 10*time.Second, func() (bool, error) {
		seenAt, okL = lwsSeen.at(name)
		readyAt, okR = lwsReadySeen.at(name)
		return okL && okR, nil
	})
	if !okL || !okR {
		return seenAt, readyAt, fmt.Errorf("%s: its LeaderWorkerSet was not seen (created %v, ready %v)", name, okL, okR)
	}
	return seenAt, readyAt, nil
}

// deleteNamespace deletes a namespace and waits (5 min at most) until it is gone, so that the
// next case or side does not run while the cluster is still taking its objects down (the
// endpoints controller alone sends thousands of requests for the -unrelated case's Services).
func deleteNamespace(ctx context.Context, name string) {
	_ = kc.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_, _ = until(ctx, 5*time.Minute, func() (bool, error) {
		err := kc.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// recovery deletes worker 1 of group 0 and times, by watch, until every pod of the group is new
// and Ready and the top object says ready.
func recovery(ctx context.Context, s side, ns, name string) (time.Duration, phases, error) {
	old := podUIDs(ctx, ns, name)
	worker := name + "-0-1"
	return timedByWatch(ctx, s, ns, name, 2*time.Minute, 10*time.Second, func() error {
		return kc.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: worker}})
	}, 3, func(p *corev1.Pod) bool { return !old[p.UID] }, worker, nil)
}

// rollout sets a new image and times, by watch, until every pod runs it, Ready, and the top
// object says so.
func rollout(ctx context.Context, s side, ns, name, image string) (time.Duration, phases, error) {
	return timedByWatch(ctx, s, ns, name, 3*time.Minute, 0, func() error {
		return s.setImage(ctx, ns, name, image)
	}, 8, func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == image }, "", func(lws *lwsv1.LeaderWorkerSet) bool {
		return templateImage(lws) == image
	})
}

// templateImage is the image of the first container of a LeaderWorkerSet's worker template (the
// leader's is the same in the harness's sets).
func templateImage(lws *lwsv1.LeaderWorkerSet) string {
	if cs := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// phases are where an idle recovery's or rollout's time went, each from its start, stamped when
// the harness's watch delivered the change that made it hold: the first new pod, every pod new
// (made, not yet Ready: since session 20, to tell the group's making from its pods' start), every
// pod new and Ready, the top object Ready.
type phases struct {
	// oldDeleted is when the first old pod the act did not delete itself was marked for
	// deletion: in a recovery the LWS pod controller restarting the group (its leader deleted),
	// in a rollout the first group taken down (the StatefulSet controller, once LWS updated the
	// leader StatefulSet); the first new pod is made after it.
	oldDeleted                        time.Duration
	firstNew, podsNew, podsReady, top time.Duration
	// firstWorker is when the first new worker pod was seen (since session 28): the first new
	// pod is the group's leader, which the leader StatefulSet (kube-controller-manager) makes;
	// the workers come once LWS's pod controller has applied their StatefulSet for that leader.
	firstWorker time.Duration
	// template is, in a rollout (since session 30), when the set's LeaderWorkerSet was first
	// seen with the new pod template: for LWS alone the echo of the harness's own patch, for
	// kubectl-llm the serving's change, the operator's pass and its apply (its step in for an
	// update), the only step of a rollout that is the operator's and not the embedded LWS's.
	template time.Duration
}

// timedByWatch watches the pods of the set name and its top object, does act, and returns how
// long from act until want pods are live, each new (isNew) and Ready, and the top object ready,
// with the phases on the way. Each stamp is when the watch delivered the change that made it
// hold: a poll (what the harness did before session 17) stamps up to its period plus a list
// later, ~50–150 ms on changes that take 1–2 s.
//
// With stall > 0, a case whose want pods are all live and Ready, some of them old, with no pod
// event for stall, ends with errNotRecreated. actDeletes names the pod act deletes itself, if any.
// With isNewTemplate, the set's LeaderWorkerSet is watched too (on both sides alike), and the
// phase template stamped when it first satisfies it.
func timedByWatch(ctx context.Context, s side, ns, name string, timeout, stall time.Duration, act func() error, want int, isNew func(*corev1.Pod) bool, actDeletes string, isNewTemplate func(*lwsv1.LeaderWorkerSet) bool) (time.Duration, phases, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	podWatch, err := kc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name})
	if err != nil {
		return 0, phases{}, err
	}
	defer podWatch.Stop()
	topWatch, err := kc.Watch(ctx, s.topList(), client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		return 0, phases{}, err
	}
	defer topWatch.Stop()
	var setEvents <-chan watch.Event
	if isNewTemplate != nil {
		setWatch, err := kc.Watch(ctx, &lwsv1.LeaderWorkerSetList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
		if err != nil {
			return 0, phases{}, err
		}
		defer setWatch.Stop()
		setEvents = setWatch.ResultChan()
	}
	start := time.Now()
	if err := act(); err != nil {
		return 0, phases{}, err
	}
	var ph phases
	pods := map[types.UID]*corev1.Pod{}
	var top client.Object
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPodEvent := time.Now()
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-podWatch.ResultChan():
			lastPodEvent = time.Now()
		case ev, ok = <-topWatch.ResultChan():
		case ev, ok = <-setEvents:
			if ok && ev.Type != watch.Error {
				if set, isSet := ev.Object.(*lwsv1.LeaderWorkerSet); isSet && ph.template == 0 && isNewTemplate(set) {
					ph.template = time.Since(start)
				}
				continue
			}
		case <-tick.C:
			if stall > 0 && time.Since(lastPodEvent) > stall && readyButOld(pods, want, isNew) {
				return 0, ph, fmt.Errorf("%w: %s", errNotRecreated, stuckAt(pods, isNew, top, s))
			}
			continue
		case <-ctx.Done():
			return 0, ph, fmt.Errorf("not done after %s: %s; %s", timeout, stuckAt(pods, isNew, top, s), setStatefulSets(ns, name))
		}
		at := time.Since(start)
		if !ok || ev.Type == watch.Error {
			return 0, ph, fmt.Errorf("a watch ended: %v", ev.Object)
		}
		switch o := ev.Object.(type) {
		case *corev1.Pod:
			if ph.oldDeleted == 0 && !isNew(o) && o.Name != actDeletes && (o.DeletionTimestamp != nil || ev.Type == watch.Deleted) {
				ph.oldDeleted = at
			}
			if ev.Type == watch.Deleted {
				delete(pods, o.UID)
			} else {
				pods[o.UID] = o
			}
		case client.Object:
			top = o
		}
		done, made, live := true, true, 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if isNew(p) && ph.firstNew == 0 {
				ph.firstNew = at
			}
			if isNew(p) && ph.firstWorker == 0 && p.Labels[lwsv1.WorkerIndexLabelKey] != "0" {
				ph.firstWorker = at
			}
			made = made && isNew(p)
			done = done && isNew(p) && podReady(p)
		}
		if made && live == want && ph.podsNew == 0 {
			ph.podsNew = at
		}
		if !done || live != want {
			continue
		}
		if ph.podsReady == 0 {
			ph.podsReady = at
		}
		if top != nil && s.topReady(top) {
			ph.top = at
			return at, ph, nil
		}
	}
}

// errNotRecreated: LWS remade only the deleted worker, not its group (the worker's StatefulSet
// made it again before LWS's pod controller restarted the group: an upstream race, seen on both
// sides, once in about a hundred recoveries in sessions 21 and 22). The recovery case times a group
// remade; such a one is counted, not timed, and the cases go on.
var errNotRecreated = errors.New("the group was not remade, only the deleted pod (not timed)")

// readyButOld says whether want pods are live and Ready, some of them old.
func readyButOld(pods map[types.UID]*corev1.Pod, want int, isNew func(*corev1.Pod) bool) bool {
	live, old := 0, 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if !podReady(p) {
			return false
		}
		live++
		if !isNew(p) {
			old++
		}
	}
	return live == want && old > 0
}

// setStatefulSets says what the StatefulSets of the set name are when a case is stuck (since
// session 30, when a rollout's group waited 3 minutes for a worker): each one's owner, deletion,
// replicas and the pods it says it has, read afresh (the case's context is over by then).
func setStatefulSets(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := &appsv1.StatefulSetList{}
	if err := kc.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		return "its StatefulSets: " + err.Error()
	}
	var out []string
	for _, st := range list.Items {
		owner := "none"
		if ref := metav1.GetControllerOf(&st); ref != nil {
			owner = ref.Kind + " " + ref.Name + " " + string(ref.UID)
		}
		out = append(out, fmt.Sprintf("StatefulSet %s owner=%s deleting=%v replicas=%d current=%d ready=%d generation=%d/%d", st.Name, owner,
			st.DeletionTimestamp != nil, ptr.Deref(st.Spec.Replicas, 0), st.Status.CurrentReplicas, st.Status.ReadyReplicas, st.Status.ObservedGeneration, st.Generation))
	}
	sort.Strings(out)
	return fmt.Sprintf("its %d StatefulSets: %s; %s", len(out), strings.Join(out, "; "), setEvents(ctx, ns, name))
}

// setEvents is the last events of the set's objects (the LeaderWorkerSet, its StatefulSets and
// pods, all named after it), oldest first: a StatefulSet controller that could not make a pod
// says so there.
func setEvents(ctx context.Context, ns, name string) string {
	list := &corev1.EventList{}
	if err := kc.List(ctx, list, client.InNamespace(ns)); err != nil {
		return "its events: " + err.Error()
	}
	var evs []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name || strings.HasPrefix(e.InvolvedObject.Name, name+"-") {
			evs = append(evs, e)
		}
	}
	at := func(e corev1.Event) time.Time {
		return cmp.Or(e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time)
	}
	sort.SliceStable(evs, func(i, j int) bool { return at(evs[i]).Before(at(evs[j])) })
	const last = 20
	evs = evs[max(0, len(evs)-last):]
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s %s/%s %s ×%d: %s", at(e).UTC().Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message))
	}
	return fmt.Sprintf("its last %d events: %s", len(out), strings.Join(out, "; "))
}

// stuckAt says what a timed case's watches showed last: each pod (new or old, Ready or not, being
// deleted) and the top object (none seen since the case began, Ready or not, and its status).
func stuckAt(pods map[types.UID]*corev1.Pod, isNew func(*corev1.Pod) bool, top client.Object, s side) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("pod %s uid=%s new=%v ready=%v deleting=%v node=%q phase=%s", p.Name, p.UID, isNew(p), podReady(p), p.DeletionTimestamp != nil, p.Spec.NodeName, p.Status.Phase))
	}
	sort.Strings(out)
	if top == nil {
		out = append(out, "top object: no event since the case began")
	} else {
		st, _ := json.Marshal(reflect.ValueOf(top).Elem().FieldByName("Status").Interface())
		out = append(out, fmt.Sprintf("top object ready=%v, status %s", s.topReady(top), st))
	}
	return strings.Join(out, "; ")
}

// until polls cond every 50 ms and returns how long it took from start (now when not given).
func until(ctx context.Context, timeout time.Duration, cond func() (bool, error), start ...time.Time) (time.Duration, error) {
	t0 := time.Now()
	if len(start) > 0 {
		t0 = start[0]
	}
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return 0, err
		}
		if ok {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func livePods(ctx context.Context, ns, set string) []corev1.Pod {
	var pods corev1.PodList
	_ = kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: set})
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podUIDs(ctx context.Context, ns, set string) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range livePods(ctx, ns, set) {
		out[p.UID] = true
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func newNamespace(ctx context.Context, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := kc.Create(ctx, ns); err != nil {
		panic(err)
	}
	for { // pods need the namespace's default ServiceAccount
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{}); err == nil {
			return ns.Name
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// servingSpec is the ModelServing both sides run: LWS alone gets the LeaderWorkerSet the
// operator would make of it, so the pods are the same.
func servingSpec(ns, name string, replicas, size int32, image string) *v1.ModelServing {
	return &v1.ModelServing{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "ModelServing"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ModelServingSpec{
			Model: "Qwen/Qwen3-0.6B", Replicas: ptr.To(replicas), GroupSize: size,
			Engine: v1.EngineSpec{Type: v1.EngineVLLM, Image: image, Port: 8000},
		},
	}
}

// lwsAlone is the upstream manager's side. Its log is copied into the run's directory when it
// stops, beside the operator's, since the cluster's directory goes with the cluster.
func lwsAlone(cluster *sim.Cluster, dir string) side {
	s := side{name: "lws"}
	var upstream *sim.UpstreamLWS
	s.metrics = func(ctx context.Context) map[string]float64 {
		text, err := upstream.Metrics(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream metrics:", err)
			return nil
		}
		return parseSeries(text)
	}
	s.start = func(ctx context.Context) (int, func(), error) {
		u, err := startUpstream(ctx, cluster)
		if err != nil {
			return 0, nil, err
		}
		upstream = u
		return u.Pid, func() {
			_ = u.Stop(context.Background())
			if b, err := os.ReadFile(u.Log); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "lws-upstream.log"), b, 0o644)
			}
		}, nil
	}
	// The ModelServing as the API server defaults it, asked once per shape (a dry run) rather
	// than in each create: the burst's loop makes one request per object on both sides, so that
	// its objects arrive as fast on both.
	defaulted := map[string]*v1.ModelServing{}
	var defaultedMu sync.Mutex
	services := &beside{}
	s.drain = services.wait
	s.create = func(ctx context.Context, ns, name string, replicas, size int32, image string) error {
		shape := fmt.Sprintf("%s/%d/%d/%s", ns, replicas, size, image)
		defaultedMu.Lock()
		ms, ok := defaulted[shape]
		if !ok {
			ms = servingSpec(ns, name, replicas, size, image)
			ms.TypeMeta = metav1.TypeMeta{}
			if err := kc.Create(ctx, ms, client.DryRunAll); err != nil { // the API server's defaults
				defaultedMu.Unlock()
				return err
			}
			defaulted[shape] = ms
		}
		defaultedMu.Unlock()
		ms = ms.DeepCopy()
		ms.Name = name
		spec, err := revision.SpecOf(ms.Spec)
		if err != nil {
			return err
		}
		ac, err := operator.DesiredLeaderWorkerSet(operator.LWSInput{Serving: ms, Revision: revision.Name(name, spec), RevisionSpec: spec, Replicas: replicas})
		if err != nil {
			return err
		}
		ac.OwnerReferences = nil // no ModelServing: LWS alone
		if err := kc.Apply(ctx, ac, client.FieldOwner("scale"), client.ForceOwnership); err != nil {
			return err
		}
		// The Service in front of the leaders that a user of LWS alone applies beside it (as
		// LWS's own vLLM example does), the one the operator makes: the same endpoints work. A
		// second client makes it, one after the other, as the operator makes its Services beside
		// its passes: the loop goes on to the next LeaderWorkerSet.
		svc := operator.DesiredService(ms)
		svc.OwnerReferences = nil
		services.do(func() error { return kc.Apply(ctx, svc, client.FieldOwner("scale"), client.ForceOwnership) })
		return nil
	}
	s.remove = func(ctx context.Context, ns, name string) error {
		if err := kc.Delete(ctx, &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); client.IgnoreNotFound(err) != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: naming.ServiceName(name)}}
		return client.IgnoreNotFound(kc.Delete(ctx, svc))
	}
	s.setImage = func(ctx context.Context, ns, name, image string) error {
		lws := &lwsv1.LeaderWorkerSet{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lws); err != nil {
			return err
		}
		patch := client.MergeFrom(lws.DeepCopy())
		for _, t := range []*corev1.PodTemplateSpec{lws.Spec.LeaderWorkerTemplate.LeaderTemplate, &lws.Spec.LeaderWorkerTemplate.WorkerTemplate} {
			if t != nil {
				t.Spec.Containers[0].Image = image
			}
		}
		return kc.Patch(ctx, lws, patch)
	}
	s.ready = func(ctx context.Context, ns, name string) (bool, error) {
		lws := &lwsv1.LeaderWorkerSet{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lws); err != nil {
			return false, err
		}
		return lwsReady(lws), nil
	}
	s.topList = func() client.ObjectList { return &lwsv1.LeaderWorkerSetList{} }
	s.topReady = func(o client.Object) bool { return lwsReady(o.(*lwsv1.LeaderWorkerSet)) }
	s.watchReady = func(ctx context.Context, ns string) (<-chan sighting, error) {
		return watchTop(ctx, s.topList(), ns, s.topReady)
	}
	return s
}

func kubectlLLM(cluster *sim.Cluster, bin, dir string) side {
	s := side{name: "kubectl-llm"}
	s.metrics = func(context.Context) map[string]float64 { return scrape(operatorMetrics) }
	s.start = func(ctx context.Context) (int, func(), error) {
		// The install's webhook configurations, empty until the operator fills them (removed
		// when it stops, so that LWS alone in a later round is not refused by them).
		if err := cluster.InstallOperatorManifests(ctx, "embedded"); err != nil {
			return 0, nil, err
		}
		op, err := startOperator(bin, cluster.Kubeconfig, filepath.Join(dir, "operator.log"))
		if err != nil {
			return 0, nil, err
		}
		return op.Process.Pid, func() {
			stopOperator(op)
			name := operator.DefaultWebhookOptions().ConfigName
			_ = kc.Delete(context.Background(), &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
			_ = kc.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}, nil
	}
	s.create = func(ctx context.Context, ns, name string, replicas, size int32, image string) error {
		ms := servingSpec(ns, name, replicas, size, image)
		ms.TypeMeta = metav1.TypeMeta{}
		return kc.Create(ctx, ms)
	}
	s.remove = func(ctx context.Context, ns, name string) error {
		return client.IgnoreNotFound(kc.Delete(ctx, &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	s.setImage = func(ctx context.Context, ns, name, image string) error {
		ms := &v1.ModelServing{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ms); err != nil {
			return err
		}
		patch := client.MergeFrom(ms.DeepCopy())
		ms.Spec.Engine.Image = image
		return kc.Patch(ctx, ms, patch)
	}
	servingReady := func(ms *v1.ModelServing) bool {
		return ms.Status.Phase == v1.PhaseReady && ms.Status.ObservedGeneration == ms.Generation
	}
	s.ready = func(ctx context.Context, ns, name string) (bool, error) {
		ms := &v1.ModelServing{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ms); err != nil {
			return false, err
		}
		return servingReady(ms), nil
	}
	s.topList = func() client.ObjectList { return &v1.ModelServingList{} }
	s.topReady = func(o client.Object) bool { return servingReady(o.(*v1.ModelServing)) }
	s.watchReady = func(ctx context.Context, ns string) (<-chan sighting, error) {
		return watchTop(ctx, s.topList(), ns, s.topReady)
	}
	return s
}

// beside runs functions one after the other on a goroutine of its own, in the order given.
type beside struct {
	mu      sync.Mutex
	queue   []func() error
	running bool
	err     error
	pending sync.WaitGroup
}

// do queues f behind what is queued.
func (b *beside) do(f func() error) {
	b.pending.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, f)
	if !b.running {
		b.running = true
		go b.run()
	}
}

func (b *beside) run() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) > 0 {
		f := b.queue[0]
		b.queue = b.queue[1:]
		b.mu.Unlock()
		err := f()
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
		}
		b.pending.Done()
	}
	b.running = false
}

// wait waits until everything queued ran, and returns the first error since the last wait.
func (b *beside) wait() error {
	b.pending.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.err
	b.err = nil
	return err
}

// lwsReady says whether a LeaderWorkerSet's status reports every group ready on its spec.
func lwsReady(lws *lwsv1.LeaderWorkerSet) bool {
	want := ptr.Deref(lws.Spec.Replicas, 1)
	return lws.Status.ReadyReplicas == want && lws.Status.UpdatedReplicas == want && lws.Status.Replicas == want
}

// seen is when a watch first saw each object satisfy a condition.
type seen struct {
	mu sync.Mutex
	t  map[string]time.Time
}

func (s *seen) at(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.t[name]
	return t, ok
}

// firstSeen records, from a watch of the namespace, when each object first satisfied cond.
func firstSeen(ctx context.Context, list client.ObjectList, ns string, cond func(client.Object) bool) (*seen, error) {
	names, err := watchTop(ctx, list, ns, cond)
	if err != nil {
		return nil, err
	}
	s := &seen{t: map[string]time.Time{}}
	go func() {
		for got := range names {
			s.mu.Lock()
			s.t[got.name] = got.at
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// apiRequests reads the API server's request counters (apiserver_request_total) summed by
// verb and resource ("PATCH modelservings/status").
func apiRequests(ctx context.Context) (map[string]float64, error) {
	raw, err := kube.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseRequests(string(raw)), nil
}

// apiServerSeries reads every series of the API server's metrics.
func apiServerSeries(ctx context.Context) (map[string]float64, error) {
	raw, err := kube.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseSeries(string(raw)), nil
}

// apiWaits is, between two reads of the API server's metrics, the mean latency of a request by
// verb and resource ("latency PATCH pods/status", long-running verbs left out), of each
// admission webhook call ("webhook mpod.kubectl-llm.dev CREATE") and the mean wait in API priority and
// fairness by priority level ("queue workload-low") and the mean time a request of that level
// then ran ("run workload-low"; none where the API server runs without priority and fairness,
// as kwokctl's does): a client whose requests wait there is
// throttled by the server, not by its own work.
func apiWaits(before, after map[string]float64) map[string]time.Duration {
	sums, counts := map[string]float64{}, map[string]float64{}
	add := func(key string, series string, v float64) {
		switch {
		case strings.HasSuffix(series, "_sum"):
			sums[key] += v
		case strings.HasSuffix(series, "_count"):
			counts[key] += v
		}
	}
	for k, v := range after {
		name, labels, _ := strings.Cut(k, "{")
		d := v - before[k]
		switch name {
		case "apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count":
			verb := labelValue(labels, "verb")
			if verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT" {
				continue
			}
			res := labelValue(labels, "resource")
			if sub := labelValue(labels, "subresource"); sub != "" {
				res += "/" + sub
			}
			add("latency "+verb+" "+res, name, d)
		case "apiserver_admission_webhook_admission_duration_seconds_sum", "apiserver_admission_webhook_admission_duration_seconds_count":
			add("webhook "+labelValue(labels, "name")+" "+labelValue(labels, "operation"), name, d)
		case "apiserver_flowcontrol_request_wait_duration_seconds_sum", "apiserver_flowcontrol_request_wait_duration_seconds_count":
			if labelValue(labels, "execute") != "true" {
				continue
			}
			add("queue "+labelValue(labels, "priority_level"), name, d)
		case "apiserver_flowcontrol_request_execution_seconds_sum", "apiserver_flowcontrol_request_execution_seconds_count":
			if labelValue(labels, "type") != "regular" {
				continue
			}
			add("run "+labelValue(labels, "priority_level"), name, d)
		}
	}
	out := map[string]time.Duration{}
	for k, c := range counts {
		if c >= 1 {
			out[k] = time.Duration(sums[k] / c * float64(time.Second))
		}
	}
	return out
}

// labelValue is the value of one label in a series' labels (`a="x",b="y"}`).
func labelValue(labels, key string) string {
	for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// parseRequests sums apiserver_request_total by verb and resource[/subresource], leaving out
// WATCH and the watch list verbs (long-running, counted once per watch).
func parseRequests(text string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(line[len("apiserver_request_total{"):end], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		verb := labels["verb"]
		if verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT" || labels["resource"] == "" {
			continue
		}
		val, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		res := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[verb+" "+res] += val
	}
	return out
}

// perObject is the difference of two request counts divided by n, leaving out what moved by
// less than 0.05 per object.
func perObject(before, after map[string]float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := (v - before[k]) / float64(n); d >= 0.05 {
			out[k] = d
		}
	}
	return out
}

// isWrite says whether a verb of apiRequests changes state.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE":
		return true
	}
	return false
}

// scrape reads a Prometheus text endpoint into series → value ("name{labels}" as written);
// nil when it cannot be read.
func scrape(addr string) map[string]float64 {
	out, err := exec.Command("curl", "-sf", "http://"+addr+"/metrics").Output()
	if err != nil {
		return nil
	}
	return parseSeries(string(out))
}

// parseSeries reads Prometheus text into series → value ("name{labels}" as written).
func parseSeries(text string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// sumSeries sums the difference of every series of metric whose labels contain want.
func sumSeries(before, after map[string]float64, metric, want string) float64 {
	total := 0.0
	for k, v := range after {
		name, labels, _ := strings.Cut(k, "{")
		if name == metric && strings.Contains(labels, want) {
			total += v - before[k]
		}
	}
	return total
}

// hasMetric reports whether any series of metric was read.
func hasMetric(series map[string]float64, metric string) bool {
	for k := range series {
		if name, _, _ := strings.Cut(k, "{"); name == metric {
			return true
		}
	}
	return false
}

// internals is what a controller's own metrics say of the burst: per controller ("modelserving",
// "leaderworkerset", "pod") the reconciles per object, the mean wait in its queue and the mean
// work of one pass (ms), and its client's requests per object. Nil when they cannot be read.
func internals(before, after map[string]float64, n int) map[string]float64 {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]float64{}
	for _, c := range []string{"modelserving", "leaderworkerset", "pod"} {
		rec := sumSeries(before, after, "controller_runtime_reconcile_total", `controller="`+c+`"`)
		if rec == 0 {
			continue
		}
		qs := sumSeries(before, after, "workqueue_queue_duration_seconds_sum", `name="`+c+`"`)
		qc := sumSeries(before, after, "workqueue_queue_duration_seconds_count", `name="`+c+`"`)
		ws := sumSeries(before, after, "workqueue_work_duration_seconds_sum", `name="`+c+`"`)
		wc := sumSeries(before, after, "workqueue_work_duration_seconds_count", `name="`+c+`"`)
		out[c+" reconciles"] = rec / float64(n)
		// Passes that failed, or asked again at once: both go back through the queue's rate
		// limiter (per object exponential from 5 ms, and 10 a second for the whole queue).
		out[c+" limited"] = (sumSeries(before, after, "controller_runtime_reconcile_total", `controller="`+c+`",result="error"`) +
			sumSeries(before, after, "controller_runtime_reconcile_total", `controller="`+c+`",result="requeue"`)) / float64(n)
		out[c+" queue"] = 1000 * qs / max(qc, 1)
		out[c+" work"] = 1000 * ws / max(wc, 1)
	}
	out["client requests"] = sumSeries(before, after, "rest_client_requests_total", "") / float64(n)
	// Only the operator reports its client's rate limiter (kubectl-llm's own metric).
	if hasMetric(after, operator.ClientThrottleMetric+"_count") {
		out["client throttled"] = 1000 * sumSeries(before, after, operator.ClientThrottleMetric+"_sum", "") / float64(n)
	}
	// Where the rest of the Go runtime's memory is: free heap spans not yet returned to the
	// system (resident until the scavenger returns them), goroutine stacks, and all it holds.
	inUse, held, _ := heapOf(after)
	out["heap"], out["heap retained"] = inUse, held-inUse
	out["stacks"] = after["go_memstats_stack_inuse_bytes"] / (1 << 20)
	out["go sys"] = after["go_memstats_sys_bytes"] / (1 << 20)
	return out
}

// lastWords is, per serving, the last Progressing condition its status showed before it was Ready.
type lastWords struct {
	mu sync.Mutex
	m  map[string]string
}

func (l *lastWords) of(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[name]
}

// watchLastWords records the lastWords of the servings of a namespace.
func watchLastWords(ctx context.Context, ns string) (*lastWords, error) {
	w, err := kc.Watch(ctx, &v1.ModelServingList{}, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	l := &lastWords{m: map[string]string{}}
	go func() {
		defer w.Stop()
		ready := map[string]bool{}
		for ev := range w.ResultChan() {
			ms, ok := ev.Object.(*v1.ModelServing)
			if !ok || ready[ms.Name] {
				continue
			}
			if ms.Status.Phase == v1.PhaseReady {
				ready[ms.Name] = true
				continue
			}
			if c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionProgressing); c != nil {
				l.mu.Lock()
				l.m[ms.Name] = fmt.Sprintf("%s %s: %s (%s)", ms.Status.Phase, c.Reason, c.Message, time.Now().Format("15:04:05.0"))
				l.mu.Unlock()
			}
		}
	}()
	return l, nil
}

// sighting is an object's name and when a watch saw it.
type sighting struct {
	name string
	at   time.Time
}

// watchTop delivers each object once, the first time ready(object) holds, stamped with the time
// the watch saw it (the reader may come later).
//
// The API server ends a watch now and then: on its timeout, and at once when the watcher falls
// behind its events (a burst of 1000 servings is some ten thousand updates; a watch of them ended
// mid-burst in session 26, and the burst then waited for its deadline with every object Ready).
// So an ended watch is followed by a list of what is there and a watch from the list's
// resourceVersion; an object first seen ready on that list is stamped then, late, and said on
// stderr.
func watchTop(ctx context.Context, list client.ObjectList, ns string, ready func(client.Object) bool) (<-chan sighting, error) {
	w, err := kc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	out := make(chan sighting, 4096)
	go func() {
		seen := map[string]bool{}
		see := func(o client.Object) bool {
			if seen[o.GetName()] || !ready(o) {
				return false
			}
			seen[o.GetName()] = true
			out <- sighting{o.GetName(), time.Now()}
			return true
		}
		for {
			for ev := range w.ResultChan() {
				if o, ok := ev.Object.(client.Object); ok && ev.Type != watch.Deleted {
					see(o)
				}
			}
			w.Stop()
			for {
				if ctx.Err() != nil {
					return
				}
				if w, err = watchOnFromList(ctx, list, ns, see); err == nil {
					break
				}
				time.Sleep(time.Second)
			}
		}
	}()
	return out, nil
}

// watchOnFromList lists the namespace's objects of list's kind, hands each to see, and watches
// them from the list's resourceVersion: what watchTop does when its watch ended.
func watchOnFromList(ctx context.Context, list client.ObjectList, ns string, see func(client.Object) bool) (watch.Interface, error) {
	now := list.DeepCopyObject().(client.ObjectList)
	if err := kc.List(ctx, now, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	late := 0
	if err := meta.EachListItem(now, func(o runtime.Object) error {
		if co, ok := o.(client.Object); ok && see(co) {
			late++
		}
		return nil
	}); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "the watch of %T in %s ended: listed again, %d first seen ready on the list (stamped late)\n", list, ns, late)
	return kc.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: now.GetResourceVersion()}})
}

// internalRow is one row of the controllers' own metrics (see internals): its key, its name in
// the table and its unit.
type internalRow struct{ key, name, unit string }

// printTable prints the side-by-side table of each side's rounds: durations pooled over the
// rounds, the other figures their medians, and with three rounds a side or more each duration's
// ratio with its 95 % interval (ratioInterval).
func printTable(w *os.File, n, reps, nodes int, lwsRounds, llmRounds []*results) {
	lws, llm := merge(lwsRounds), merge(llmRounds)
	if churnOnly {
		fmt.Fprintf(w, "Simulated cluster of %d nodes; burst: %d objects; recovery and rollout only while the burst is deleted, median [min–max] of all rounds.\n\n", nodes, n)
	} else {
		fmt.Fprintf(w, "Simulated cluster of %d nodes; recovery and rollout: median [min–max] of %d; burst: %d objects.\n\n", nodes, reps, n)
	}
	if len(lwsRounds) >= 3 && len(llmRounds) >= 3 {
		fmt.Fprintf(w, "A ratio of durations is followed by its 95 %% interval, by a bootstrap over the pairs of rounds that ran one after the other (%d resamples): a goal of 1.05× holds only with the interval's top under it.\n\n", intervalResamples)
	}
	fmt.Fprintln(w, "| case | LWS alone | kubectl-llm | ratio |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	// rowOf is a row of durations; withInterval gives its ratio an interval: the cases' rows,
	// whose durations are pooled over the rounds (not a quantile of each round).
	rowOf := func(name string, f func(*results) []time.Duration, withInterval bool) {
		a, b := "—", "—"
		ratio := "—"
		var ma, mb time.Duration
		if lws != nil {
			ma, a = spread(f(lws))
		}
		if llm != nil {
			mb, b = spread(f(llm))
		}
		if ma > 0 && mb > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(mb)/float64(ma))
			if withInterval {
				if lo, hi, ok := ratioInterval(perRound(lwsRounds, f), perRound(llmRounds, f), intervalResamples, intervalRNG()); ok {
					ratio += fmt.Sprintf(" [%.2f–%.2f]", lo, hi)
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, a, b, ratio)
	}
	row := func(name string, f func(*results) []time.Duration) { rowOf(name, f, false) }
	caseRow := func(name string, f func(*results) []time.Duration) { rowOf(name, f, true) }
	// num is a row of a figure; known says whether a side measured it (both, when nil).
	numOf := func(name, unit string, f func(*results) float64, known func(*results) bool) {
		a, b, ratio := "—", "—", "—"
		if lws != nil && (known == nil || known(lws)) {
			a = fmt.Sprintf("%.1f %s", f(lws), unit)
		}
		if llm != nil && (known == nil || known(llm)) {
			b = fmt.Sprintf("%.1f %s", f(llm), unit)
		}
		if lws != nil && llm != nil && f(lws) > 0 {
			ratio = fmt.Sprintf("%.2f× (%+.1f %s)", f(llm)/f(lws), f(llm)-f(lws), unit)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, a, b, ratio)
	}
	num := func(name, unit string, f func(*results) float64) { numOf(name, unit, f, nil) }
	// internalRows are rows of the controllers' own metrics, each from the map of gives: the
	// client-side rate limiter's wait, which only the operator reports, is "—" on the other side.
	internalRows := func(prefix string, rows []internalRow, of func(*results) map[string]float64) {
		for _, c := range rows {
			numOf(prefix+c.name, c.unit, func(r *results) float64 { return of(r)[c.key] }, func(r *results) bool {
				_, ok := of(r)[c.key]
				return ok || c.key != "client throttled"
			})
		}
	}
	phaseRows := func(name string, of func(*results) []phases) {
		for _, p := range []struct {
			name string
			at   func(phases) time.Duration
		}{
			{"its LeaderWorkerSet seen with the new template (for kubectl-llm, the operator's step in)", template},
			{"its first old pod marked for deletion (not by the harness)", oldDeleted},
			{"its first new pod seen", firstNew},
			{"its first new worker pod seen", func(p phases) time.Duration { return p.firstWorker }},
			{"every pod new (made, not yet Ready)", func(p phases) time.Duration { return p.podsNew }},
			{"every pod new and Ready", func(p phases) time.Duration { return p.podsReady }},
			{"→ the top object Ready, after its pods", func(p phases) time.Duration { return p.top - p.podsReady }},
		} {
			at := func(r *results) []time.Duration {
				var ds []time.Duration
				for _, ph := range of(r) {
					ds = append(ds, p.at(ph))
				}
				return ds
			}
			if !stamped(lws, at) && !stamped(llm, at) {
				continue // a phase of rollouts only (the template), in a recovery's rows
			}
			caseRow(name+": "+p.name, at)
		}
	}
	if !churnOnly {
		caseRow("worker deleted → group of 3 recreated and Ready, idle", func(r *results) []time.Duration { return r.recovery })
		caseRow("4 groups × 2, new image → all new and Ready, idle", func(r *results) []time.Duration { return r.rollout })
		phaseRows("idle recovery", func(r *results) []phases { return r.recoveryPhases })
		numOf("idle recoveries in which LWS remade only the deleted pod (not timed)", "", func(r *results) float64 { return float64(r.notRecreated) }, nil)
		phaseRows("idle rollout", func(r *results) []phases { return r.rolloutPhases })
		num("controller CPU per idle recovery and rollout (one of each)", "ms", func(r *results) float64 { return float64(r.idleCPU.Microseconds()) / 1000 })
		for _, c := range components {
			num(c+" CPU per idle recovery and rollout", "ms", func(r *results) float64 { return float64(r.idleComponentCPU[c].Microseconds()) / 1000 })
		}
		internalRows("", []internalRow{
			{"modelserving reconciles", "ModelServing passes per idle recovery and rollout", ""},
			{"modelserving work", "ModelServing pass during the idle cases, mean", "ms"},
			{"leaderworkerset reconciles", "LeaderWorkerSet passes per idle recovery and rollout", ""},
			{"leaderworkerset queue", "LeaderWorkerSet queue wait during the idle cases, mean", "ms"},
			{"leaderworkerset work", "LeaderWorkerSet pass during the idle cases, mean", "ms"},
			{"pod reconciles", "LWS pod controller passes per idle recovery and rollout", ""},
			{"pod queue", "LWS pod controller queue wait during the idle cases, mean", "ms"},
			{"client requests", "controller's requests per idle recovery and rollout (its client)", ""},
			{"client throttled", "controller's requests' wait in its client-side rate limiter, per idle recovery and rollout", "ms"},
		}, func(r *results) map[string]float64 { return r.idleInternals })
	}
	if idleOnly {
		if singleN > 0 {
			for _, c := range singleCases {
				caseRow("one at a time beside the idle cases' 2: "+c.name, c.of)
			}
		}
		printRequests(w, lws, llm)
		return
	}
	churnRows := func(how string, of func(*results) *churned) {
		row(how+": the first delete → their last pod gone", func(r *results) []time.Duration { return of(r).deletion })
		if (lws != nil && len(of(lws).namespaceGone) > 0) || (llm != nil && len(of(llm).namespaceGone) > 0) {
			row(how+": the namespace's delete → the namespace gone", func(r *results) []time.Duration { return of(r).namespaceGone })
		}
		numOf(how+": recoveries (and as many rollouts) timed meanwhile", "", func(r *results) float64 { return float64(len(of(r).recovery)) }, nil)
		numOf(how+": recoveries in which LWS remade only the deleted pod (not timed)", "", func(r *results) float64 { return float64(of(r).notRecreated) }, nil)
		caseRow("recovery "+how, func(r *results) []time.Duration { return of(r).recovery })
		caseRow("rollout "+how, func(r *results) []time.Duration { return of(r).rollout })
		phaseRows("recovery "+how, func(r *results) []phases { return of(r).recoveryPhases })
		phaseRows("rollout "+how, func(r *results) []phases { return of(r).rolloutPhases })
	}
	byObject := fmt.Sprintf("while %d of the burst are deleted one at a time, %g a second", n/2, deleteRate)
	byNamespace := fmt.Sprintf("while the other %d are deleted with their namespace", n-n/2)
	churnRows(byObject, func(r *results) *churned { return &r.byObject })
	churnRows(byNamespace, func(r *results) *churned { return &r.byNamespace })
	q := func(p float64) func(*results) []time.Duration {
		return func(r *results) []time.Duration { return []time.Duration{quantile(r.burst, p)} }
	}
	row(fmt.Sprintf("burst of %d: its creates, first to last (%s)", n, arrivals()), func(r *results) []time.Duration {
		return []time.Duration{r.createLoop}
	})
	row(fmt.Sprintf("burst of %d → each Ready, p50", n), q(0.5))
	row(fmt.Sprintf("burst of %d → each Ready, p99", n), q(0.99))
	row(fmt.Sprintf("burst of %d → each Ready, max", n), q(1))
	type figure struct {
		name string
		f    func(*results) []time.Duration
	}
	// quantiles are the p50 and p99 rows of each figure, its name after prefix.
	quantiles := func(prefix string, figures []figure) {
		for _, l := range figures {
			for _, p := range []float64{0.5, 0.99} {
				row(fmt.Sprintf("%s: %s, p%.0f", prefix, l.name, p*100), func(r *results) []time.Duration {
					if d := l.f(r); len(d) > 0 {
						return []time.Duration{quantile(d, p)}
					}
					return nil
				})
			}
		}
	}
	stepIn := "created → its LeaderWorkerSet seen (the operator's step in)"
	stepOut := "LeaderWorkerSet Ready → serving Ready (the operator's step out)"
	quantiles("burst", []figure{
		{stepIn, func(r *results) []time.Duration { return r.toLWS }},
		{"created → its LeaderWorkerSet's status Ready", func(r *results) []time.Duration { return r.lwsReady }},
		{stepOut, func(r *results) []time.Duration { return r.fromLWS }},
		{"created → its Service seen", func(r *results) []time.Duration { return r.toService }},
		{"its LeaderWorkerSet's status Ready → its Service seen (0 when before)", func(r *results) []time.Duration { return r.serviceLate }},
		{"the later of its LeaderWorkerSet's status Ready and its Service seen → serving Ready (the step out without the Service's wait)", func(r *results) []time.Duration { return r.fromLWSAndService }},
	})
	if singleN > 0 {
		// The -single case's steps, with the step in from the create (the harness's own write
		// included) after created → Ready.
		figures := []figure{{singleCases[0].name, singleCases[0].of}, {stepIn, func(r *results) []time.Duration { return r.singleToLWS }}}
		for _, c := range singleCases[1:] {
			figures = append(figures, figure{c.name, c.of})
		}
		quantiles(fmt.Sprintf("one at a time among %d converged", n), figures)
	}
	num("controller CPU per burst object", "ms", func(r *results) float64 { return float64(r.cpuPerObject.Microseconds()) / 1000 })
	for _, c := range components {
		num(c+" CPU per burst object", "ms", func(r *results) float64 { return float64(r.componentCPU[c].Microseconds()) / 1000 })
	}
	internalRows("", []internalRow{
		{"modelserving reconciles", "ModelServing passes per burst object", ""},
		{"modelserving limited", "ModelServing passes failed or requeued at once (rate-limited) per burst object", ""},
		{"modelserving queue", "ModelServing queue wait, mean", "ms"},
		{"modelserving work", "ModelServing pass, mean", "ms"},
		{"leaderworkerset reconciles", "LeaderWorkerSet passes per burst object", ""},
		{"leaderworkerset limited", "LeaderWorkerSet passes failed or requeued at once (rate-limited) per burst object", ""},
		{"leaderworkerset queue", "LeaderWorkerSet queue wait, mean", "ms"},
		{"leaderworkerset work", "LeaderWorkerSet pass, mean", "ms"},
		{"pod reconciles", "LWS pod controller passes per burst object", ""},
		{"client requests", "controller's requests per burst object (its client)", ""},
		{"client throttled", "controller's requests' wait in its client-side rate limiter, per burst object", "ms"},
		{"heap", "controller heap in use after the burst", "MiB"},
		{"heap retained", "controller heap free but not returned to the system after the burst", "MiB"},
		{"stacks", "controller goroutine stacks after the burst", "MiB"},
		{"go sys", "controller memory held by the Go runtime after the burst", "MiB"},
		{"rss anon", "controller RSS anonymous after the burst (heap, stacks)", "MiB"},
		{"rss file", "controller RSS file-backed after the burst (the binary's pages)", "MiB"},
		{"rss peak", "controller RSS at its highest, by the burst's end (VmHWM)", "MiB"},
		{"heap peak", "controller heap in use at its highest during the burst (sampled every 2 s)", "MiB"},
		{"heap held peak", "controller heap held (in use and free not returned) at its highest during the burst (sampled)", "MiB"},
		{"heap goal peak", "controller GC heap goal at its highest during the burst (sampled)", "MiB"},
	}, func(r *results) map[string]float64 { return r.internals })
	churnCost := func(how string, of func(*results) *churned) {
		num(fmt.Sprintf("%s: the machine's CPU busy (every process, its %d cores together), median of the rounds", how, cores()), "%", func(r *results) float64 { return 100 * of(r).busy })
		num(how+": controller CPU per deleted object", "ms", func(r *results) float64 { return float64(of(r).cpu.Microseconds()) / 1000 })
		for _, c := range components {
			num(how+": "+c+" CPU per deleted object", "ms", func(r *results) float64 {
				return float64(of(r).componentCPU[c].Microseconds()) / 1000
			})
		}
		internalRows(how+": ", []internalRow{
			{"modelserving reconciles", "ModelServing passes per deleted object", ""},
			{"modelserving queue", "ModelServing queue wait, mean", "ms"},
			{"leaderworkerset reconciles", "LeaderWorkerSet passes per deleted object", ""},
			{"leaderworkerset queue", "LeaderWorkerSet queue wait, mean", "ms"},
			{"leaderworkerset work", "LeaderWorkerSet pass, mean", "ms"},
			{"pod reconciles", "LWS pod controller passes per deleted object", ""},
			{"pod queue", "LWS pod controller queue wait, mean", "ms"},
			{"client requests", "controller's requests per deleted object (its client)", ""},
			{"client throttled", "controller's requests' wait in its client-side rate limiter, per deleted object", "ms"},
		}, func(r *results) map[string]float64 { return of(r).internals })
	}
	churnCost(byObject, func(r *results) *churned { return &r.byObject })
	churnCost(byNamespace, func(r *results) *churned { return &r.byNamespace })
	num("controller RSS before the burst", "MiB", func(r *results) float64 { return r.rssIdle })
	num("controller RSS after the burst", "MiB", func(r *results) float64 { return r.rss })
	num("API writes per burst object (every client)", "", func(r *results) float64 { return sumRequests(r.requests, isWrite) })
	num("API reads per burst object (every client)", "", func(r *results) float64 {
		return sumRequests(r.requests, func(k string) bool { return !isWrite(k) })
	})
	if unrelatedN > 0 {
		num(fmt.Sprintf("controller RSS before %d unrelated objects of each of 4 kinds", unrelatedN), "MiB", func(r *results) float64 { return r.rssUnrelated0 })
		num(fmt.Sprintf("controller RSS with %d unrelated objects of each of 4 kinds", unrelatedN), "MiB", func(r *results) float64 { return r.rssUnrelated })
	}
	if llm != nil && llm.get != nil {
		g := llm.get
		fmt.Fprintf(w, "| `kubectl llm get` of %d servings, median of 5 (against `kubectl get modelservings`) | %s | %s | %.2f× |\n",
			g.n, round(g.kctl), round(g.llm), float64(g.llm)/float64(g.kctl))
	}
	printSlowestNamespaces(w, lws, llm)
	printRequests(w, lws, llm)
}

// printSlowestNamespaces says, for each side, where its slowest namespace deletion went.
func printSlowestNamespaces(w *os.File, lws, llm *results) {
	for i, r := range []*results{lws, llm} {
		if r == nil {
			continue
		}
		if s := slowestNamespace(r.byNamespace.namespaceGone, r.byNamespace.namespaceWhere); s != "" {
			fmt.Fprintf(w, "\n%s: the slowest namespace deletion, %s\n", []string{"LWS alone", "kubectl-llm"}[i], s)
		}
	}
}

// stamped says whether any of r's phases that at gives was stamped (false for a side not measured).
func stamped(r *results, at func(*results) []time.Duration) bool {
	if r == nil {
		return false
	}
	for _, d := range at(r) {
		if d > 0 {
			return true
		}
	}
	return false
}

func sumRequests(m map[string]float64, keep func(string) bool) float64 {
	total := 0.0
	for k, v := range m {
		if keep(k) {
			total += v
		}
	}
	return total
}

// printRequests is the table of API requests per burst object by verb and resource, both sides,
// and per deleted object while half the burst is deleted one at a time and while the other half
// goes with its namespace.
func printRequests(w *os.File, lws, llm *results) {
	requestTable(w, "API requests per idle recovery and rollout (one of each)", lws, llm, func(r *results) map[string]float64 { return r.idleRequests })
	if idleOnly {
		printWaits(w, lws, llm)
		return
	}
	requestTable(w, "API requests per burst object", lws, llm, func(r *results) map[string]float64 { return r.requests })
	requestTable(w, fmt.Sprintf("API requests per deleted object while half the burst is deleted one at a time, %g a second (the cases' too)", deleteRate),
		lws, llm, func(r *results) map[string]float64 { return r.byObject.requests })
	requestTable(w, "API requests per deleted object while the other half goes with its namespace (the cases' too)",
		lws, llm, func(r *results) map[string]float64 { return r.byNamespace.requests })
	printWaits(w, lws, llm)
}

// requestTable prints one table of printRequests, of the requests of each side that of gives.
func requestTable(w *os.File, title string, lws, llm *results, of func(*results) map[string]float64) {
	sorted := bothKeys(lws, llm, of)
	if len(sorted) == 0 {
		return
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		if isWrite(sorted[i]) != isWrite(sorted[j]) {
			return isWrite(sorted[i])
		}
		return sorted[i] < sorted[j]
	})
	fmt.Fprintf(w, "\n%s, by verb and resource (the API server's counters):\n", title)
	fmt.Fprintln(w, "\n| request | LWS alone | kubectl-llm |\n| --- | ---: | ---: |")
	val := func(r *results, k string) string {
		if r == nil || of(r)[k] == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", of(r)[k])
	}
	for _, k := range sorted {
		fmt.Fprintf(w, "| %s | %s | %s |\n", k, val(lws, k), val(llm, k))
	}
}

// bothKeys is the sorted union of the keys of one map of each side's results.
func bothKeys[V any](lws, llm *results, m func(*results) map[string]V) []string {
	keys := map[string]bool{}
	for _, r := range []*results{lws, llm} {
		if r != nil {
			for k := range m(r) {
				keys[k] = true
			}
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	return sorted
}

// printWaits prints the API server's mean latency by verb and its priority-and-fairness queue
// wait by priority level during each side's burst.
func printWaits(w *os.File, lws, llm *results) {
	waitTable(w, "during the idle cases", lws, llm, func(r *results) map[string]time.Duration { return r.idleWait })
	if idleOnly {
		return
	}
	waitTable(w, "during the burst", lws, llm, func(r *results) map[string]time.Duration { return r.apiWait })
	waitTable(w, fmt.Sprintf("while half the burst is deleted one at a time, %g a second", deleteRate), lws, llm,
		func(r *results) map[string]time.Duration { return r.byObject.apiWait })
	waitTable(w, "while the other half goes with its namespace", lws, llm,
		func(r *results) map[string]time.Duration { return r.byNamespace.apiWait })
}

// waitTable prints one table of printWaits, of the waits of each side that of gives.
func waitTable(w *os.File, when string, lws, llm *results, of func(*results) map[string]time.Duration) {
	sorted := bothKeys(lws, llm, of)
	if len(sorted) == 0 {
		return
	}
	fmt.Fprintf(w, "\nThe API server %s: mean latency of a request by verb, mean wait in priority and fairness by level:\n", when)
	fmt.Fprintln(w, "\n| | LWS alone | kubectl-llm |\n| --- | ---: | ---: |")
	val := func(r *results, k string) string {
		if r == nil {
			return "—"
		}
		d, ok := of(r)[k]
		if !ok {
			return "—"
		}
		return d.Round(100 * time.Microsecond).String()
	}
	for _, k := range sorted {
		fmt.Fprintf(w, "| %s | %s | %s |\n", k, val(lws, k), val(llm, k))
	}
}

// spread is the median and "median [min–max]".
func spread(ds []time.Duration) (time.Duration, string) {
	if len(ds) == 0 {
		return 0, "—"
	}
	m := quantile(ds, 0.5)
	if len(ds) == 1 {
		return m, round(m)
	}
	return m, fmt.Sprintf("%s [%s–%s]", round(m), round(quantile(ds, 0)), round(quantile(ds, 1)))
}

func spreadOf(ds []time.Duration) string {
	_, s := spread(ds)
	return s
}

func quantile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1))]
}

// round shows a duration to the millisecond under a second (the operator's own steps are a few
// of them), to 10 ms above.
func round(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

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

func rssMiB(pid int) (float64, error) { return procStatusMiB(pid, "VmRSS") }

// procStatusMiB is a memory field of /proc/<pid>/status (VmRSS, VmHWM…) in MiB.
func procStatusMiB(pid int, field string) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}

// rssParts is a process's resident memory by kind from /proc/<pid>/status: anonymous (heap,
// stacks) and file-backed (the binary's pages), in MiB.
func rssParts(pid int) string {
	anon, file := rssKinds(pid)
	return fmt.Sprintf("RssAnon %.1f MiB, RssFile %.1f MiB", anon, file)
}

// rssByMapping is a process's resident memory from /proc/<pid>/smaps, summed by what it maps:
// the binary's code (r-x), its read-only data and tables (r--), its data (rw-), and anonymous
// memory (heap, stacks), in MiB. It says which of the binary's pages a larger binary keeps.
func rssByMapping(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return err.Error()
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	sums := map[string]float64{}
	kind := ""
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			switch path := strings.Join(f[5:], " "); {
			case path == exe:
				kind = "binary " + f[1][:3]
			case path == "" || strings.HasPrefix(path, "["):
				kind = "anonymous"
			default:
				kind = "other files"
			}
		case len(f) >= 2 && f[0] == "Rss:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			sums[kind] += kb / 1024
		}
	}
	var parts []string
	for _, k := range []string{"binary r-x", "binary r--", "binary rw-", "anonymous", "other files"} {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, sums[k]))
	}
	return strings.Join(parts, ", ") + " MiB"
}

// rssKinds is a process's anonymous and file-backed resident memory in MiB (0 when unreadable).
func rssKinds(pid int) (anon, file float64) {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "RssAnon:":
				anon = kb / 1024
			case "RssFile:":
				file = kb / 1024
			}
		}
	}
	return anon, file
}

// components are the simulated cluster's processes whose CPU the table shows.
var components = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// roundOrder is the sides in round r: A B, then B A, then A B…
func roundOrder(sides []side, r int) []side {
	if r%2 == 0 {
		return sides
	}
	out := make([]side, len(sides))
	for i, s := range sides {
		out[len(sides)-1-i] = s
	}
	return out
}

// arrivals says how the burst's objects were created.
func arrivals() string {
	if burstRate > 0 {
		return fmt.Sprintf("%g a second on a fixed schedule", burstRate)
	}
	return "one after the other, one client"
}

// merge pools the rounds of one side: durations side by side, every other figure as the median
// of the rounds (request counts and API server waits as their mean).
func merge(rs []*results) *results {
	if len(rs) == 0 {
		return nil
	}
	if len(rs) == 1 {
		return rs[0]
	}
	m := &results{requests: map[string]float64{}, apiWait: map[string]time.Duration{}, idleWait: map[string]time.Duration{}, componentCPU: map[string]time.Duration{},
		idleRequests: map[string]float64{}, idleInternals: map[string]float64{}, idleComponentCPU: map[string]time.Duration{},
		internals: map[string]float64{}}
	var cpu, loops []time.Duration
	var idle, after, un0, un1 []float64
	for _, r := range rs {
		m.recovery = append(m.recovery, r.recovery...)
		m.rollout = append(m.rollout, r.rollout...)
		m.recoveryPhases = append(m.recoveryPhases, r.recoveryPhases...)
		m.notRecreated += r.notRecreated
		m.rolloutPhases = append(m.rolloutPhases, r.rolloutPhases...)
		m.burst = append(m.burst, r.burst...)
		m.toLWS = append(m.toLWS, r.toLWS...)
		m.lwsReady = append(m.lwsReady, r.lwsReady...)
		m.fromLWS = append(m.fromLWS, r.fromLWS...)
		m.toService = append(m.toService, r.toService...)
		m.serviceLate = append(m.serviceLate, r.serviceLate...)
		m.fromLWSAndService = append(m.fromLWSAndService, r.fromLWSAndService...)
		m.single = append(m.single, r.single...)
		m.singleToLWS = append(m.singleToLWS, r.singleToLWS...)
		m.singleSeenToLWS = append(m.singleSeenToLWS, r.singleSeenToLWS...)
		m.singleFromLWS = append(m.singleFromLWS, r.singleFromLWS...)
		m.singleToPod = append(m.singleToPod, r.singleToPod...)
		m.singlePodReady = append(m.singlePodReady, r.singlePodReady...)
		m.singleToLWSReady = append(m.singleToLWSReady, r.singleToLWSReady...)
		for k, v := range r.requests {
			m.requests[k] += v / float64(len(rs))
		}
		for k, v := range r.idleWait {
			m.idleWait[k] += v / time.Duration(len(rs))
		}
		for k, v := range r.idleRequests {
			m.idleRequests[k] += v / float64(len(rs))
		}
		m.idleCPU += r.idleCPU / time.Duration(len(rs))
		for k, v := range r.idleComponentCPU {
			m.idleComponentCPU[k] += v / time.Duration(len(rs))
		}
		for k, v := range r.idleInternals {
			m.idleInternals[k] += v / float64(len(rs))
		}
		for k, v := range r.apiWait {
			m.apiWait[k] += v / time.Duration(len(rs))
		}
		for k, v := range r.internals {
			m.internals[k] += v / float64(len(rs))
		}
		cpu = append(cpu, r.cpuPerObject)
		loops = append(loops, r.createLoop)
		idle, after = append(idle, r.rssIdle), append(after, r.rss)
		un0, un1 = append(un0, r.rssUnrelated0), append(un1, r.rssUnrelated)
		if r.get != nil {
			m.get = r.get
		}
		if r.slowestAt.d > m.slowestAt.d {
			m.slowest, m.slowestAt = r.slowest, r.slowestAt
		}
	}
	for _, name := range components {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, r.componentCPU[name])
		}
		m.componentCPU[name] = median(ds)
	}
	var byObject, byNamespace []churned
	for _, r := range rs {
		byObject, byNamespace = append(byObject, r.byObject), append(byNamespace, r.byNamespace)
	}
	m.byObject.merge(byObject)
	m.byNamespace.merge(byNamespace)
	m.cpuPerObject = median(cpu)
	m.createLoop = median(loops)
	m.rssIdle, m.rss, m.rssUnrelated0, m.rssUnrelated = medianOf(idle), medianOf(after), medianOf(un0), medianOf(un1)
	return m
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// componentCPU is the CPU time each of the cluster's components has used so far (none that
// cannot be read).
func componentCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	pids, err := cluster.ComponentPids()
	if err != nil {
		return out
	}
	for name, pid := range pids {
		if t, err := cpuTime(pid); err == nil {
			out[name] = t
		}
	}
	return out
}

// cpuProfile starts saving the operator's CPU profile of the next seconds to file, on the
// kubectl-llm side when file is set, and returns what waits for it to be saved (nothing to wait
// for otherwise).
func cpuProfile(s side, file string, seconds int) (wait func() error, err error) {
	if file == "" || s.name != "kubectl-llm" {
		return func() error { return nil }, nil
	}
	profile := exec.Command("curl", "-sf", "-o", file, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", operatorPprof, seconds))
	if err := profile.Start(); err != nil {
		return nil, err
	}
	return func() error {
		if err := profile.Wait(); err != nil {
			return fmt.Errorf("profile %s: %w", file, err)
		}
		return nil
	}, nil
}

// componentCPUSince is each component's CPU since the readings of componentCPU in before, per
// one of n objects (or cases).
func componentCPUSince(before map[string]time.Duration, n int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, t := range componentCPU() {
		out[name] = (t - before[name]) / time.Duration(n)
	}
	return out
}

// freePorts are n free ports of 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var out []int
	for i := 0; i < n; i++ {
		p, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// startUpstream runs the upstream LWS manager on free webhook and probe ports.
func startUpstream(ctx context.Context, cluster *sim.Cluster) (*sim.UpstreamLWS, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return cluster.StartUpstreamLWS(ctx, ports[0], ports[1])
}

// startOperator runs the operator on free ports and waits for it to be ready. A port found free
// can still be taken before the operator binds it (a run of session 30 lost its second round to
// "bind: address already in use"): then it is started again on other ports, three times at most.
func startOperator(bin, kubeconfig, logPath string) (*exec.Cmd, error) {
	for attempt := 1; ; attempt++ {
		cmd, err := startOperatorOnce(bin, kubeconfig, logPath)
		if errors.Is(err, errPortTaken) && attempt < 3 {
			fmt.Fprintf(os.Stderr, "scale: %v; starting it again on other ports\n", err)
			continue
		}
		return cmd, err
	}
}

// errPortTaken: the operator exited because a port it was given was taken meanwhile.
var errPortTaken = errors.New("a port of the operator was taken before it could bind it")

func startOperatorOnce(bin, kubeconfig, logPath string) (*exec.Cmd, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	probe, webhook, metrics := ports[0], ports[1], ports[2]
	operatorMetrics = fmt.Sprintf("127.0.0.1:%d", metrics)
	args := []string{"operator", "--kubeconfig", kubeconfig, "--as", sim.OperatorServiceAccount, "--lws=embedded", "--leader-elect=false",
		"--metrics-bind-address=" + operatorMetrics, fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probe),
		"--webhook-port", strconv.Itoa(webhook), "--zap-log-level=error"}
	if heapFile != "" || cpuFile != "" || traceFile != "" || churnCPUFile != "" || idleCPUFile != "" {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		operatorPprof = fmt.Sprintf("127.0.0.1:%d", port)
		args = append(args, "--pprof-bind-address="+operatorPprof)
	}
	cmd := exec.Command(bin, append(args, strings.Fields(operatorArgs)...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
	}()
	operatorExited.Store(cmd, exited)
	for i := 0; i < 300; i++ {
		if out, err := exec.Command("curl", "-sf", fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)).Output(); err == nil && len(out) > 0 {
			return cmd, nil
		}
		select {
		case <-exited:
			said, _ := os.ReadFile(logPath)
			if bytes.Contains(said, []byte("address already in use")) {
				return nil, fmt.Errorf("%w (%s)", errPortTaken, lastLine(said))
			}
			return nil, fmt.Errorf("operator exited before it was ready: %s; see %s", lastLine(said), logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stopOperator(cmd)
	return nil, fmt.Errorf("operator not ready; see %s", logPath)
}

// lastLine is the last line of a log that says something.
func lastLine(log []byte) string {
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	return lines[len(lines)-1]
}

// operatorExited is, by operator process, a channel closed once it has exited (the process is
// waited for by one goroutine alone).
var operatorExited sync.Map

func stopOperator(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if exited, ok := operatorExited.Load(cmd); ok {
		<-exited.(chan struct{})
		return
	}
	_, _ = cmd.Process.Wait()
}
