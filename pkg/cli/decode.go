package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// decodeServing decodes one object of a list on its own (v1.DecodeServing).
func decodeServing(u *unstructured.Unstructured) servingItem {
	ms, undecodable, err := v1.DecodeServing(u)
	return servingItem{ModelServing: *ms, Err: err, Undecodable: undecodable, raw: u}
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

// listServings lists servings, each decoded on its own. The list is read typed first: one decode of
// the bytes, a quarter of what the unstructured read costs (BenchmarkDecodeServingList, 1000
// servings). Only when that read fails (a serving that does not fit the Go type fails the whole
// typed list) is it read again unstructured, each serving decoded on its own, so that a bad one is
// shown as bad and the others still print.
func listServings(ctx context.Context, c client.Client, opts ...client.ListOption) ([]servingItem, string, error) {
	typed := &v1.ModelServingList{}
	err := c.List(ctx, typed, opts...)
	if err == nil {
		items := make([]servingItem, 0, len(typed.Items))
		for i := range typed.Items {
			ms := &typed.Items[i]
			items = append(items, servingItem{ModelServing: *ms, Err: v1.CheckServing(ms)})
		}
		return items, typed.GetResourceVersion(), nil
	}
	if errors.As(err, new(apierrors.APIStatus)) {
		return nil, "", err // the API server's answer: reading it again would get the same
	}
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
