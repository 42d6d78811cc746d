package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	dsv1 "sigs.k8s.io/lws/api/disaggregatedset/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/test/sim"
)

// The -disagg case: one prefill/decode topology (2 prefill and 6 decode groups of 2 pods),
// rolled to a new image -reps times by LWS's DisaggregatedSet (the upstream manager, which
// hosts its controller) and by a ModelServing with spec.roles (the operator, one LWS per role
// moved by coordinated partitions). Both get the same pod templates: the DisaggregatedSet's
// roles are the LeaderWorkerSets the operator renders for each role, with the same rollout
// limits. For each rollout it reports how long until every pod runs the new image and is Ready,
// and, from a watch of the pods (every event), how far the roles' fractions of new ready groups
// drifted apart and how few groups of each role were ready at the worst moment.

var disaggRoles = []struct {
	name     v1.RoleName
	replicas int32
}{{v1.RolePrefill, 2}, {v1.RoleDecode, 6}}

const disaggGroupSize = 2

// disaggServing is the ModelServing of the case, as the API server defaults it.
func disaggServing(ctx context.Context, ns, image string) (*v1.ModelServing, error) {
	ms := servingSpec(ns, "pd", 1, 1, image)
	ms.TypeMeta = metav1.TypeMeta{}
	ms.Spec.Replicas, ms.Spec.GroupSize = nil, 0
	for _, r := range disaggRoles {
		ms.Spec.Roles = append(ms.Spec.Roles, v1.RoleSpec{Name: r.name, Replicas: ptr.To(r.replicas), GroupSize: ptr.To[int32](disaggGroupSize)})
	}
	return ms, nil
}

// disaggSet is the DisaggregatedSet of the same topology: each role's LeaderWorkerSet template
// is the one the operator renders for the role, with the serving's rollout limits of the role.
func disaggSet(ctx context.Context, ns, image string) (*unstructured.Unstructured, error) {
	ms, err := disaggServing(ctx, ns, image)
	if err != nil {
		return nil, err
	}
	if err := kc.Create(ctx, ms, client.DryRunAll); err != nil { // the API server's defaults
		return nil, err
	}
	spec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		return nil, err
	}
	ds := &dsv1.DisaggregatedSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: dsv1.GroupVersion.String(), Kind: "DisaggregatedSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pd"},
	}
	for _, r := range disaggRoles {
		ac, err := operator.DesiredRoleLeaderWorkerSet(operator.RoleLWSInput{Serving: ms, Role: r.name, Revision: revision.Name("pd", spec),
			RevisionSpec: spec, Target: roleplan.Target{Name: r.name, Replicas: r.replicas, Updated: r.replicas}})
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(ac)
		if err != nil {
			return nil, err
		}
		lws := &lwsv1.LeaderWorkerSet{}
		if err := json.Unmarshal(raw, lws); err != nil {
			return nil, err
		}
		eff, _ := ms.Spec.ForRole(r.name)
		ru := &lwsv1.RollingUpdateConfiguration{}
		if s := eff.Rollout.MaxSurge; s != nil {
			ru.MaxSurge = *s
		}
		if u := eff.Rollout.MaxUnavailable; u != nil {
			ru.MaxUnavailable = *u
		}
		lws.Spec.RolloutStrategy = lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType, RollingUpdateConfiguration: ru}
		ds.Spec.Roles = append(ds.Spec.Roles, dsv1.DisaggregatedRoleSpec{Name: string(r.name),
			LeaderWorkerSetTemplateSpec: lwsv1.LeaderWorkerSetTemplateSpec{Spec: lws.Spec}})
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ds)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// disaggSide is how one side makes, selects and rolls the topology.
type disaggSide struct {
	name string
	// start runs the controller; it returns how to stop it.
	start func(ctx context.Context) (func(), error)
	// create makes the topology with an image; setImage rolls it to another.
	create, setImage func(ctx context.Context, ns, image string) error
	// podSet and podRole are the labels that select the topology's pods and name their role.
	podSet, podRole string
}

func disaggSides(cluster *sim.Cluster, bin, dir string) []disaggSide {
	ds := disaggSide{name: "DisaggregatedSet", podSet: dsv1.SetNameLabelKey, podRole: dsv1.RoleLabelKey}
	ds.start = func(ctx context.Context) (func(), error) {
		u, err := startUpstream(ctx, cluster)
		if err != nil {
			return nil, err
		}
		return func() { _ = u.Stop(context.Background()) }, nil
	}
	ds.create = func(ctx context.Context, ns, image string) error {
		u, err := disaggSet(ctx, ns, image)
		if err != nil {
			return err
		}
		return kc.Create(ctx, u)
	}
	ds.setImage = func(ctx context.Context, ns, image string) error {
		u, err := disaggSet(ctx, ns, image)
		if err != nil {
			return err
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(dsv1.GroupVersion.WithKind("DisaggregatedSet"))
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pd"}, live); err != nil {
			return err
		}
		u.SetResourceVersion(live.GetResourceVersion())
		return kc.Update(ctx, u)
	}
	llm := disaggSide{name: "kubectl-llm roles", podSet: v1.LabelName, podRole: naming.LabelRole}
	llm.start = func(ctx context.Context) (func(), error) {
		op, err := startOperator(bin, cluster.Kubeconfig, filepath.Join(dir, "operator-disagg.log"))
		if err != nil {
			return nil, err
		}
		return func() { stopOperator(op) }, nil
	}
	llm.create = func(ctx context.Context, ns, image string) error {
		ms, err := disaggServing(ctx, ns, image)
		if err != nil {
			return err
		}
		return kc.Create(ctx, ms)
	}
	llm.setImage = func(ctx context.Context, ns, image string) error {
		ms := &v1.ModelServing{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pd"}, ms); err != nil {
			return err
		}
		patch := client.MergeFrom(ms.DeepCopy())
		ms.Spec.Engine.Image = image
		return kc.Patch(ctx, ms, patch)
	}
	return []disaggSide{ds, llm}
}

// disaggResult is one rollout of one side.
type disaggResult struct {
	took time.Duration
	// skew is the largest difference, at any pod event, between the roles' fractions of groups
	// on the new image and ready; minReady is per role the fewest ready groups at any event.
	skew     float64
	minReady map[string]int
	events   int
	// paired is when the new image first had a ready group of every role (a router can send it
	// a request); maxPods the most live pods at once (the GPUs the rollout really takes);
	// created the pods the rollout created.
	paired           time.Duration
	maxPods, created int
}

// podBook follows the topology's pods from a watch and says, per role, how many groups are
// ready and how many are ready on an image.
type podBook struct {
	s    disaggSide
	mu   sync.Mutex
	pods map[string]*corev1.Pod
}

// groups counts per role the groups (by LeaderWorkerSet and group index) whose
// disaggGroupSize pods are all ready, and of those how many run image.
func (b *podBook) groups(image string) (ready, readyNew map[string]int) {
	type key struct{ role, set, index string }
	type count struct{ ready, new int }
	byGroup := map[key]*count{}
	for _, p := range b.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		k := key{p.Labels[b.s.podRole], p.Labels[lwsv1.SetNameLabelKey], p.Labels[lwsv1.GroupIndexLabelKey]}
		c := byGroup[k]
		if c == nil {
			c = &count{}
			byGroup[k] = c
		}
		if podReady(p) {
			c.ready++
			if p.Spec.Containers[0].Image == image {
				c.new++
			}
		}
	}
	ready, readyNew = map[string]int{}, map[string]int{}
	for k, c := range byGroup {
		if c.ready == disaggGroupSize {
			ready[k.role]++
		}
		if c.new == disaggGroupSize {
			readyNew[k.role]++
		}
	}
	return ready, readyNew
}

// live is the number of pods not being deleted.
func (b *podBook) live() int {
	n := 0
	for _, p := range b.pods {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// done says whether every desired group of every role is ready on image, and no other pod lives.
func (b *podBook) done(image string) bool {
	live := b.live()
	want := 0
	_, readyNew := b.groups(image)
	for _, r := range disaggRoles {
		want += int(r.replicas) * disaggGroupSize
		if readyNew[string(r.name)] != int(r.replicas) {
			return false
		}
	}
	return live == want
}

// rolloutDisagg rolls the topology to image and follows every pod event until it is done.
func rolloutDisagg(ctx context.Context, s disaggSide, ns, image string) (*disaggResult, error) {
	w, err := kc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.HasLabels{s.podSet})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	b := &podBook{s: s, pods: map[string]*corev1.Pod{}}
	pods := &corev1.PodList{}
	if err := kc.List(ctx, pods, client.InNamespace(ns), client.HasLabels{s.podSet}); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		b.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	res := &disaggResult{minReady: map[string]int{}}
	for _, r := range disaggRoles {
		res.minReady[string(r.name)] = int(r.replicas)
	}
	start := time.Now()
	if err := s.setImage(ctx, ns, image); err != nil {
		return nil, err
	}
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("%s: the pod watch ended", s.name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(b.pods, p.Name)
			} else {
				if ev.Type == watch.Added && p.CreationTimestamp.Time.After(start.Add(-time.Second)) {
					res.created++
				}
				b.pods[p.Name] = p
			}
			res.events++
			res.maxPods = max(res.maxPods, b.live())
			ready, readyNew := b.groups(image)
			if res.paired == 0 && readyNew[string(v1.RolePrefill)] > 0 && readyNew[string(v1.RoleDecode)] > 0 {
				res.paired = time.Since(start)
			}
			fp := float64(readyNew[string(v1.RolePrefill)]) / float64(disaggRoles[0].replicas)
			fd := float64(readyNew[string(v1.RoleDecode)]) / float64(disaggRoles[1].replicas)
			res.skew = max(res.skew, fp-fd, fd-fp)
			for role := range res.minReady {
				res.minReady[role] = min(res.minReady[role], ready[role])
			}
			if b.done(image) {
				res.took = time.Since(start)
				return res, nil
			}
		case <-deadline:
			return nil, fmt.Errorf("%s: the rollout to %s not done after 5 minutes", s.name, image)
		}
	}
}

// runDisagg measures both sides, one after the other, and prints the table.
func runDisagg(ctx context.Context, cluster *sim.Cluster, bin, dir string, reps int, out io.Writer) error {
	got := map[string][]*disaggResult{}
	sides := disaggSides(cluster, bin, dir)
	for _, s := range sides {
		fmt.Fprintf(os.Stderr, "== %s\n", s.name)
		stop, err := s.start(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		ns := newNamespace(ctx, "disagg")
		if err := s.create(ctx, ns, "engine:v1"); err != nil {
			stop()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		b := &podBook{s: s}
		if _, err := until(ctx, 3*time.Minute, func() (bool, error) {
			pods := &corev1.PodList{}
			if err := kc.List(ctx, pods, client.InNamespace(ns), client.HasLabels{s.podSet}); err != nil {
				return false, err
			}
			b.pods = map[string]*corev1.Pod{}
			for i := range pods.Items {
				b.pods[pods.Items[i].Name] = &pods.Items[i]
			}
			return b.done("engine:v1"), nil
		}); err != nil {
			stop()
			return fmt.Errorf("%s: the topology not ready: %w", s.name, err)
		}
		for i := 0; i < reps; i++ {
			r, err := rolloutDisagg(ctx, s, ns, "engine:v"+strconv.Itoa(i+2))
			if err != nil {
				stop()
				return err
			}
			got[s.name] = append(got[s.name], r)
		}
		stop()
		deleteNamespace(ctx, ns)
	}
	fmt.Fprintf(out, "2 prefill and 6 decode groups of %d pods, rolled to a new image %d times; median [min–max]:\n\n", disaggGroupSize, reps)
	fmt.Fprintln(out, "| | DisaggregatedSet | kubectl-llm roles | ratio |\n| --- | --- | --- | --- |")
	ds, llm := got[sides[0].name], got[sides[1].name]
	took := func(rs []*disaggResult) []time.Duration {
		var d []time.Duration
		for _, r := range rs {
			d = append(d, r.took)
		}
		return d
	}
	ma, a := spread(took(ds))
	mb, b := spread(took(llm))
	fmt.Fprintf(out, "| new image → every pod new and Ready | %s | %s | %.2f× |\n", a, b, float64(mb)/float64(ma))
	pairedOf := func(rs []*disaggResult) []time.Duration {
		var d []time.Duration
		for _, r := range rs {
			d = append(d, r.paired)
		}
		return d
	}
	ma, a = spread(pairedOf(ds))
	mb, b = spread(pairedOf(llm))
	fmt.Fprintf(out, "| new image → a ready new group of every role (a router may send it traffic) | %s | %s | %.2f× |\n", a, b, float64(mb)/float64(ma))
	worst := func(rs []*disaggResult, f func(*disaggResult) float64, better func(a, b float64) bool) float64 {
		w := f(rs[0])
		for _, r := range rs[1:] {
			if better(f(r), w) {
				w = f(r)
			}
		}
		return w
	}
	larger := func(a, b float64) bool { return a > b }
	smaller := func(a, b float64) bool { return a < b }
	skew := func(r *disaggResult) float64 { return r.skew }
	fmt.Fprintf(out, "| largest gap between the roles' fractions of new ready groups, at any pod event | %.2f | %.2f | — |\n",
		worst(ds, skew, larger), worst(llm, skew, larger))
	pods := func(r *disaggResult) float64 { return float64(r.maxPods) }
	created := func(r *disaggResult) float64 { return float64(r.created) }
	fmt.Fprintf(out, "| most pods at once (of %d desired), worst rollout | %.0f | %.0f | — |\n", disaggGroupSize*(disaggRoles[0].replicas+disaggRoles[1].replicas),
		worst(ds, pods, larger), worst(llm, pods, larger))
	fmt.Fprintf(out, "| pods created per rollout, most | %.0f | %.0f | — |\n", worst(ds, created, larger), worst(llm, created, larger))
	for _, r := range disaggRoles {
		role := string(r.name)
		f := func(x *disaggResult) float64 { return float64(x.minReady[role]) }
		fmt.Fprintf(out, "| fewest ready %s groups at any pod event (of %d) | %.0f | %.0f | — |\n", role, r.replicas,
			worst(ds, f, smaller), worst(llm, f, smaller))
	}
	return nil
}
