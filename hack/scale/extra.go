package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// unrelatedKinds are the kinds of the unrelated objects: what the controllers of both sides
// watch (pods, Services, StatefulSets, ControllerRevisions), none of them theirs. The pods name
// a scheduler nobody runs, so they stay Pending and cost nothing but their objects.
func unrelatedObjects(ns string, i int) []client.Object {
	name := fmt.Sprintf("u%05d", i)
	meta := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "unrelated"}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "unrelated", "i": name}}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "unrelated", "i": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "unrelated:v1"}}},
	}
	pod := &corev1.Pod{ObjectMeta: meta, Spec: *tmpl.Spec.DeepCopy()}
	pod.Spec.SchedulerName = "nobody"
	return []client.Object{
		pod,
		&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"i": name},
			Ports: []corev1.ServicePort{{Port: 80}}}},
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: tmpl}},
		&appsv1.ControllerRevision{ObjectMeta: meta, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"unrelated":true}`)}},
	}
}

// unrelated creates n objects of each unrelated kind in a namespace of their own, with 8
// clients in parallel, and returns the namespace.
func unrelated(ctx context.Context, n int) (string, error) {
	ns := newNamespace(ctx, "unrelated")
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				for _, o := range unrelatedObjects(ns, i) {
					if err := kc.Create(ctx, o); err != nil {
						mu.Lock()
						if first == nil {
							first = fmt.Errorf("unrelated %T %s: %w", o, o.GetName(), err)
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return ns, first
}

// measureUnrelated is the controller's RSS before and after n objects of each unrelated kind
// are created (once its caches have had 20 s to take them in), then deletes them.
func measureUnrelated(ctx context.Context, pid, n int) (before, after float64, err error) {
	if before, err = rssMiB(pid); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	ns, err := unrelated(ctx, n)
	if err != nil {
		return 0, 0, err
	}
	fmt.Fprintf(os.Stderr, "%d unrelated objects of each of 4 kinds created in %s\n", n, time.Since(start).Round(time.Second))
	time.Sleep(20 * time.Second)
	if after, err = rssMiB(pid); err != nil {
		return 0, 0, err
	}
	fmt.Fprintf(os.Stderr, "RSS with them: %s\n", rssParts(pid))
	deleteNamespace(ctx, ns)
	return before, after, nil
}

// getTimes is `kubectl llm get` and `kubectl get modelservings` of the same n servings (each
// of 0 groups, so no pods, each with the status the operator wrote): the median wall time of
// each over reps runs, run alternately.
type getTimes struct {
	n         int
	llm, kctl time.Duration
}

func measureGet(ctx context.Context, bin, kubeconfig string, n, reps int) (*getTimes, error) {
	ns := newNamespace(ctx, "get")
	defer deleteNamespace(context.Background(), ns)
	for i := 0; i < n; i++ {
		if err := kc.Create(ctx, servingSpec(ns, fmt.Sprintf("g%04d", i), 0, 1, "engine:v1")); err != nil {
			return nil, err
		}
	}
	if _, err := until(ctx, 5*time.Minute, func() (bool, error) {
		l := &v1.ModelServingList{}
		if err := kc.List(ctx, l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, ms := range l.Items {
			if ms.Status.ObservedGeneration == ms.Generation {
				done++
			}
		}
		return done == n, nil
	}); err != nil {
		return nil, fmt.Errorf("the %d servings of the get case not reconciled: %w", n, err)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, err
	}
	timeOf := func(name string, args ...string) (time.Duration, error) {
		cmd := exec.Command(name, args...)
		cmd.Stdin = nil // output to a pipe, as a script reads it
		var stderr []byte
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return 0, fmt.Errorf("%s %v: %w %s", name, args, err, stderr)
		}
		if len(out) == 0 {
			return 0, fmt.Errorf("%s %v printed nothing", name, args)
		}
		return d, nil
	}
	var llm, kctl []time.Duration
	for i := 0; i < reps; i++ {
		d, err := timeOf(bin, "--kubeconfig", kubeconfig, "get", "-n", ns)
		if err != nil {
			return nil, err
		}
		llm = append(llm, d)
		if d, err = timeOf(kubectl, "--kubeconfig", kubeconfig, "get", "modelservings", "-n", ns); err != nil {
			return nil, err
		}
		kctl = append(kctl, d)
	}
	return &getTimes{n: n, llm: median(llm), kctl: median(kctl)}, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
