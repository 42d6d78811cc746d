// Command writecost measures what one write of each kind the operator and LWS make costs the API
// server: kube-apiserver's and etcd's CPU per write, from /proc, for N writes of each kind in turn
// against a fresh kube-apiserver and etcd (envtest's binaries), with one watch open on each kind
// (as the controllers keep them). It answers where the API server's extra CPU per serving goes
// (docs/performance.md): a ModelServing status write against an LWS status write, a metadata
// write, a ConfigMap write; and what gzip costs it per watch event (a ConfigMap write with
// -watchers watch-lists open on it, accepting gzip and not).
//
//	KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) go run ./hack/writecost -n 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

func main() {
	n := flag.Int("n", 500, "writes of each kind")
	watchers := flag.Int("watchers", 8, "watch-lists open on the ConfigMap of the compression cases (0: no such cases)")
	profiles := flag.String("profile", "", "save kube-apiserver's CPU profile of each kind's writes in this directory (<kind>.pprof), from its /debug/pprof/profile: 20 s of it, which the writes of each kind must fit in (it says when they did not)")
	flag.Parse()
	log.SetLogger(logr.Discard()) // the clients made here log nothing worth a line
	if err := run(*n, *watchers, *profiles); err != nil {
		fmt.Fprintln(os.Stderr, "writecost:", err)
		os.Exit(1)
	}
}

// aCase is one kind of write: prepare makes the object, write makes the i-th write.
type aCase struct {
	name    string
	prepare func(ctx context.Context) error
	write   func(ctx context.Context, i int) error
}

func run(n, watchers int, profiles string) error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	c := env.Client
	apiPid, err := pidOf("kube-apiserver")
	if err != nil {
		return err
	}
	etcdPid, err := pidOf("etcd")
	if err != nil {
		return err
	}
	ns := "writecost"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	ms := sampleServing(ns)
	var lws *lwsv1.LeaderWorkerSet
	cases := []aCase{
		{name: "ModelServing status (merge patch)", prepare: func(ctx context.Context) error {
			return c.Create(ctx, ms)
		}, write: statusWrites(c, func(i int) client.Object {
			return &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ms.Name}, Status: servingStatus(i)}
		})},
		{name: "ModelServing metadata (annotation, merge patch)", write: func(ctx context.Context, i int) error {
			return annotate(ctx, c, &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ms.Name}}, i)
		}},
		{name: "ModelServing deleted (DELETE, then the finalizer's removal: two writes)", prepare: func(ctx context.Context) error {
			return makeServings(ctx, c, ns, "gone", n+20, []string{v1.FinalizerChildren})
		}, write: func(ctx context.Context, i int) error {
			gone := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gone%d", i)}}
			if err := c.Delete(ctx, gone); err != nil {
				return err
			}
			return c.Patch(ctx, gone, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}},
		{name: "ModelServing deleted without a finalizer (DELETE: one write)", prepare: func(ctx context.Context) error {
			return makeServings(ctx, c, ns, "bare", n+20, nil)
		}, write: func(ctx context.Context, i int) error {
			return c.Delete(ctx, &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bare%d", i)}})
		}},
		{name: "LeaderWorkerSet status (merge patch)", prepare: func(ctx context.Context) error {
			l, err := desiredLWS(ctx, c, ms)
			lws = l
			return err
		}, write: statusWrites(c, func(i int) client.Object {
			return &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lws.Name}, Status: lwsStatus(i)}
		})},
		{name: "LeaderWorkerSet metadata (annotation, merge patch)", write: func(ctx context.Context, i int) error {
			return annotate(ctx, c, &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lws.Name}}, i)
		}},
		// A rollout's write of the set (since session 30): the operator applies the whole
		// LeaderWorkerSet it builds of the serving; a user of LWS alone patches its templates.
		{name: "LeaderWorkerSet new image (server-side apply of the whole set, as the operator rolls it)", write: func(ctx context.Context, i int) error {
			_, err := desiredLWS(ctx, c, withImage(ms, i))
			return err
		}},
		{name: "LeaderWorkerSet new image (merge patch of its templates, as LWS alone is rolled)", prepare: func(ctx context.Context) error {
			key := client.ObjectKeyFromObject(lws)
			lws = &lwsv1.LeaderWorkerSet{}
			return c.Get(ctx, key, lws)
		}, write: func(ctx context.Context, i int) error {
			next := lws.DeepCopy()
			for _, t := range []*corev1.PodTemplateSpec{next.Spec.LeaderWorkerTemplate.LeaderTemplate, &next.Spec.LeaderWorkerTemplate.WorkerTemplate} {
				if t != nil {
					t.Spec.Containers[0].Image = fmt.Sprintf("engine:patched%d", i)
				}
			}
			if err := c.Patch(ctx, next, client.MergeFrom(lws)); err != nil {
				return err
			}
			lws = next
			return nil
		}},
		{name: "ConfigMap data (merge patch)", prepare: func(ctx context.Context) error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}})
		}, write: func(ctx context.Context, i int) error {
			return annotate(ctx, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}, i)
		}},
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	// One watch of each kind, drained, as the controllers keep theirs.
	for _, l := range []client.ObjectList{&v1.ModelServingList{}, &lwsv1.LeaderWorkerSetList{}, &corev1.ConfigMapList{}} {
		w, err := wc.Watch(ctx, l, client.InNamespace(ns))
		if err != nil {
			return err
		}
		go func() {
			for range w.ResultChan() {
			}
		}()
	}
	fmt.Printf("%d writes of each kind, one after the other, one watch of each kind open\n\n", n)
	fmt.Printf("| write | kube-apiserver CPU per write | etcd CPU per write | wall per write |\n| --- | --- | --- | --- |\n")
	for _, cs := range cases {
		if cs.prepare != nil {
			if err := cs.prepare(ctx); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
		}
		for i := range 20 { // warm up
			if err := cs.write(ctx, i+1); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
		}
		var prof *apiProfile
		if profiles != "" {
			prof = startProfile(env.Config, filepath.Join(profiles, fileName(cs.name)+".pprof"))
		}
		a0, e0, t0 := cpuOf(apiPid), cpuOf(etcdPid), time.Now()
		for i := range n {
			if err := cs.write(ctx, i+21); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
		}
		wall := time.Since(t0)
		a, e := cpuOf(apiPid)-a0, cpuOf(etcdPid)-e0
		if prof != nil && wall > profileSeconds*time.Second {
			fmt.Fprintf(os.Stderr, "writecost: %s took %s: its profile holds only the first %d s of its writes (a smaller -n fits)\n", cs.name, wall.Round(time.Second), profileSeconds)
		}
		if prof != nil {
			if err := prof.stop(); err != nil {
				return fmt.Errorf("%s: kube-apiserver's profile: %w", cs.name, err)
			}
		}
		fmt.Printf("| %s | %.2f ms | %.2f ms | %.2f ms |\n", cs.name, ms1(a)/float64(n), ms1(e)/float64(n), ms1(wall)/float64(n))
	}
	if watchers > 0 {
		return watchCompression(ctx, env.Config, c, ns, n, watchers, apiPid, etcdPid)
	}
	return nil
}

// statusWrites makes the i-th write a merge patch of the status from at(i-1) to at(i).
func statusWrites(c client.Client, at func(i int) client.Object) func(ctx context.Context, i int) error {
	return func(ctx context.Context, i int) error {
		return c.Status().Patch(ctx, at(i), client.MergeFrom(at(i-1)))
	}
}

func ms1(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func annotate(ctx context.Context, c client.Client, obj client.Object, i int) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"writecost":"%d"}}}`, i)
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// makeServings creates n servings named <prefix>1 to <prefix>n with the finalizers given.
func makeServings(ctx context.Context, c client.Client, ns, prefix string, n int, finalizers []string) error {
	for i := range n {
		ms := sampleServing(ns)
		ms.Name, ms.Finalizers = fmt.Sprintf("%s%d", prefix, i+1), finalizers
		if err := c.Create(ctx, ms); err != nil {
			return err
		}
	}
	return nil
}

// sampleServing is the demo serving (config/samples/demo.yaml's shape).
func sampleServing(ns string) *v1.ModelServing {
	return &v1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: v1.ModelServingSpec{
			Model:     "Qwen/Qwen3-0.6B",
			Engine:    v1.EngineSpec{Type: "vllm", Image: "vllm/vllm-openai:v0.11.0"},
			Replicas:  ptr(int32(2)),
			GroupSize: 2,
		},
	}
}

func ptr[T any](v T) *T { return &v }

// servingStatus is a status like the operator writes for 2 groups; i changes a count and a message.
func servingStatus(i int) v1.ModelServingStatus {
	now := metav1.NewTime(time.Unix(1_800_000_000, 0))
	cond := func(t, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: fmt.Sprintf("%s at pass %d", t, i), LastTransitionTime: now, ObservedGeneration: 1}
	}
	return v1.ModelServingStatus{
		ObservedGeneration: 1,
		Conditions:         []metav1.Condition{cond("Ready", "AllGroupsReady"), cond("Progressing", "RolloutComplete"), cond("Degraded", "AsExpected")},
		Phase:              v1.PhaseReady,
		Replicas:           2,
		ReadyReplicas:      int32(i % 3),
		UpdatedReplicas:    2,
		ReadyGroups:        fmt.Sprintf("%d/2", i%3),
		CurrentRevision:    "demo-6d5f8b7c9",
		UpdateRevision:     "demo-6d5f8b7c9",
		Groups: []v1.GroupStatus{
			{Index: 0, Ready: true, ReadyPods: 2, Size: 2, Revision: "demo-6d5f8b7c9"},
			{Index: 1, Ready: i%3 == 2, ReadyPods: int32(i % 3), Size: 2, Revision: "demo-6d5f8b7c9"},
		},
	}
}

func lwsStatus(i int) lwsv1.LeaderWorkerSetStatus {
	now := metav1.NewTime(time.Unix(1_800_000_000, 0))
	return lwsv1.LeaderWorkerSetStatus{
		Conditions: []metav1.Condition{
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", Message: fmt.Sprintf("All replicas are ready %d", i), LastTransitionTime: now},
			{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Ready", Message: "Replicas are progressing", LastTransitionTime: now},
		},
		ReadyReplicas: int32(i % 3), UpdatedReplicas: 2, Replicas: 2, HPAPodSelector: "leaderworkerset.sigs.k8s.io/name=demo",
	}
}

// withImage is a copy of ms whose engine image is the i-th.
func withImage(ms *v1.ModelServing, i int) *v1.ModelServing {
	out := ms.DeepCopy()
	out.Spec.Engine.Image = fmt.Sprintf("engine:v%d", i)
	return out
}

// desiredLWS creates the LeaderWorkerSet the operator makes of ms.
func desiredLWS(ctx context.Context, c client.Client, ms *v1.ModelServing) (*lwsv1.LeaderWorkerSet, error) {
	spec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		return nil, err
	}
	ac, err := operator.DesiredLeaderWorkerSet(operator.LWSInput{Serving: ms, Revision: revision.Name(ms.Name, spec), RevisionSpec: spec, Replicas: *ms.Spec.Replicas})
	if err != nil {
		return nil, err
	}
	ac.OwnerReferences = nil
	if err := c.Apply(ctx, ac, client.FieldOwner("writecost"), client.ForceOwnership); err != nil {
		return nil, err
	}
	return &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: *ac.Name}}, nil
}

// pidOf is the child process of this one (envtest starts kube-apiserver and etcd) whose
// executable is named name.
func pidOf(name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if filepath.Base(args[0]) == name && parentOf(pid) == os.Getpid() {
			found = append(found, pid)
		}
	}
	if len(found) == 0 {
		return 0, fmt.Errorf("no %s process started by this one", name)
	}
	return found[len(found)-1], nil
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// cpuOf is the CPU time (user and system) of the process so far.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	k, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
