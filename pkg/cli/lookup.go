package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// getServing fetches a serving; when it does not exist the error names close names in the namespace.
func getServing(ctx context.Context, c client.Client, ns, name, host string) (*v1.ModelServing, error) {
	ms := &v1.ModelServing{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ms)
	if apierrors.IsNotFound(err) {
		return nil, notFound(ctx, c, ns, name, host)
	}
	if err != nil {
		return nil, explain(err, host)
	}
	return ms, nil
}

func notFound(ctx context.Context, c client.Client, ns, name, host string) error {
	items, _, err := listServings(ctx, c, client.InNamespace(ns))
	if err != nil {
		return explain(err, host)
	}
	var names []string
	for _, ms := range items {
		names = append(names, ms.Name)
	}
	msg := fmt.Sprintf("modelserving %q not found in namespace %q", name, ns)
	if close := closeNames(name, names); len(close) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, strings.Join(close, ", "))
	}
	if len(names) == 0 {
		return fmt.Errorf("%s, which has no servings (use -n NAMESPACE or -A with get)", msg)
	}
	return fmt.Errorf("%s (kubectl llm get lists the %d there)", msg, len(names))
}

// closeNames are the names within a small edit distance of name, or sharing a prefix with it.
func closeNames(name string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	var out []scored
	for _, n := range names {
		d := editDistance(name, n)
		limit := max(2, len(name)/3)
		if d <= limit || strings.HasPrefix(n, name) || strings.HasPrefix(name, n) {
			out = append(out, scored{n, d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].name < out[j].name
	})
	var names2 []string
	for i, s := range out {
		if i == 3 {
			break
		}
		names2 = append(names2, s.name)
	}
	return names2
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// patchServing reads the serving, lets mutate change a copy and sends the difference as a merge
// patch with our field manager, guarded by the resourceVersion it read (retried on conflict), so
// a decision made from the read state (a partition from replicas, say) is never applied to a
// different state.
func patchServing(ctx context.Context, c client.Client, ns, name, host string, mutate func(*v1.ModelServing) error) (*v1.ModelServing, error) {
	var out *v1.ModelServing
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ms, err := getServing(ctx, c, ns, name, host)
		if err != nil {
			return err
		}
		base := ms.DeepCopy()
		if err := mutate(ms); err != nil {
			return err
		}
		if err := c.Patch(ctx, ms, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1.FieldManager)); err != nil {
			return err
		}
		out = ms
		return nil
	})
	return out, explain(err, host)
}

// qualified is the kubectl-style name of a serving in messages: modelserving.serving.kubectl-llm.dev/NAME.
func qualified(name string) string { return "modelserving.serving.kubectl-llm.dev/" + name }
