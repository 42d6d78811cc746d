package operator

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// servingIndex indexes the cached pods and ControllerRevisions by the serving they are of (their
// name label; a revision also needs the revision hash label). A pass lists its serving's pods and
// revisions on every look: by label selector, the cache matches every pod of the namespace against
// it, which was 5 % of the operator's CPU in a burst of 300 servings in one namespace and grows with
// the namespace; by index, it reads the serving's own.
const servingIndex = "kubectl-llm.dev/serving"

// indexByServing adds servingIndex to the pods of podCache and the ControllerRevisions of
// revisionCache (before they start).
func indexByServing(podCache, revisionCache client.FieldIndexer) error {
	ctx := context.Background()
	if err := podCache.IndexField(ctx, &corev1.Pod{}, servingIndex, podServing); err != nil {
		return fmt.Errorf("index pods by serving: %w", err)
	}
	if err := revisionCache.IndexField(ctx, &appsv1.ControllerRevision{}, servingIndex, revisionServing); err != nil {
		return fmt.Errorf("index ControllerRevisions by serving: %w", err)
	}
	return nil
}

func podServing(o client.Object) []string {
	if name := o.GetLabels()[v1.LabelName]; name != "" {
		return []string{name}
	}
	return nil
}

func revisionServing(o client.Object) []string {
	if _, ok := o.GetLabels()[revision.LabelHash]; !ok {
		return nil
	}
	return podServing(o)
}

// podsOf selects the pods of a serving: by the index when the pass reads indexed caches, by label
// otherwise (a reconciler reading the API server, as in tests).
func (r *Reconciler) podsOf(ms *v1.ModelServing) []client.ListOption {
	if r.indexed {
		return []client.ListOption{client.InNamespace(ms.Namespace), client.MatchingFields{servingIndex: ms.Name}}
	}
	return []client.ListOption{client.InNamespace(ms.Namespace), client.MatchingLabels{v1.LabelName: ms.Name}}
}

// revisionsOf selects the ControllerRevisions of a serving, as podsOf does its pods.
func (r *Reconciler) revisionsOf(ms *v1.ModelServing) []client.ListOption {
	if r.indexed {
		return []client.ListOption{client.InNamespace(ms.Namespace), client.MatchingFields{servingIndex: ms.Name}}
	}
	return revision.ListOptions(ms.Namespace, ms.Name)
}
