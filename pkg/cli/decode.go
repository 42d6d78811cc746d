package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// PhaseUndecodable is what the views show for a stored serving this plugin cannot read (a
// value the API server accepted that does not fit the Go type); PhaseInvalidSpec for one whose
// spec.template does not decode. Neither is a phase the operator writes.
const (
	PhaseUndecodable = "Undecodable"
	PhaseInvalidSpec = "InvalidSpec"
)

// servingItem is one serving of a list, decoded on its own so that one bad object never hides
// the others: Err says why it could not be decoded, and then only its metadata is filled in.
type servingItem struct {
	v1.ModelServing
	Err error
	// Undecodable is true when only the metadata could be read.
	Undecodable bool
	// raw is the object as stored, for -o yaml|json of a bad one.
	raw *unstructured.Unstructured
}

// decodeServing decodes one object of a list the way the typed client would.
func decodeServing(u *unstructured.Unstructured) servingItem {
	it := servingItem{raw: u}
	raw, err := json.Marshal(u.Object)
	if err == nil {
		err = json.Unmarshal(raw, &it.ModelServing)
	}
	if err != nil {
		it.ModelServing = v1.ModelServing{}
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(md, &it.ObjectMeta) // validated by the API server
		}
		it.Undecodable = true
		it.Err = fmt.Errorf("modelserving %s/%s cannot be read: %w (fix the object with kubectl edit, or delete it)", u.GetNamespace(), u.GetName(), err)
		return it
	}
	if _, terr := v1.DecodeTemplate(it.Spec.Template); terr != nil {
		it.Err = fmt.Errorf("modelserving %s/%s: %w", u.GetNamespace(), u.GetName(), terr)
	}
	return it
}

// phase is the phase a view shows: the operator's, unless the object is bad.
func (it servingItem) phase() string {
	switch {
	case it.Err == nil:
		return string(it.Status.Phase)
	case it.Undecodable:
		return PhaseUndecodable
	default:
		return PhaseInvalidSpec
	}
}

// newServingList is an unstructured list of ModelServings, for reading a namespace without one
// bad object failing the whole list.
func newServingList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServingList"))
	return l
}

// listServings lists servings and decodes each on its own.
func listServings(ctx context.Context, c client.Client, opts ...client.ListOption) ([]servingItem, string, error) {
	l := newServingList()
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, "", err
	}
	items := make([]servingItem, 0, len(l.Items))
	for i := range l.Items {
		items = append(items, decodeServing(&l.Items[i]))
	}
	return items, l.GetResourceVersion(), nil
}

// warnBad says on stderr why each bad serving is shown as bad.
func warnBad(w io.Writer, items []servingItem) {
	for _, it := range items {
		if it.Err != nil {
			fmt.Fprintf(w, "Warning: %v\n", it.Err)
		}
	}
}
