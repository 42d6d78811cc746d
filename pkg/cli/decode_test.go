package cli

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

// listClient answers a typed list of servings with typedErr, and an unstructured one with items.
func listClient(typedErr error, items []unstructured.Unstructured, lists *int) client.Client {
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.New()).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			*lists++
			if u, ok := list.(*unstructured.UnstructuredList); ok {
				u.Items = items
				return nil
			}
			return typedErr
		},
	})
}

func storedServing(name string, spec map[string]any, status map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "spec": spec, "status": status,
	}}
}

// The typed read of the list fails when one stored serving does not fit the Go type (a value an
// older schema let through): the list is read again unstructured, that serving shown as
// undecodable, the others whole. An answer of the API server is not read twice.
func TestAListThatDoesNotDecodeTypedIsReadAgainEachServingOnItsOwn(t *testing.T) {
	good := storedServing("good", map[string]any{"model": "Qwen/Qwen3-0.6B"}, map[string]any{"phase": "Ready"})
	huge := storedServing("huge", map[string]any{"model": "Qwen/Qwen3-0.6B"}, map[string]any{"replicas": int64(99999999999)})
	decodeErr := errors.New("json: cannot unmarshal number 99999999999 into Go struct field ModelServingStatus.items.status.replicas of type int32")
	lists := 0
	items, _, err := listServings(context.Background(), listClient(decodeErr, []unstructured.Unstructured{good, huge}, &lists))
	if err != nil {
		t.Fatalf("listServings: %v", err)
	}
	if lists != 2 || len(items) != 2 {
		t.Fatalf("%d lists, %d servings; want the list read twice and both servings", lists, len(items))
	}
	if items[0].Name != "good" || items[0].Err != nil || items[0].Status.Phase != v1.PhaseReady {
		t.Errorf("good: %+v, err %v; want it whole", items[0].ObjectMeta, items[0].Err)
	}
	if items[1].Name != "huge" || !items[1].Undecodable || items[1].phase() != PhaseUndecodable || items[1].raw == nil {
		t.Errorf("huge: undecodable %v, phase %s, raw kept %v; want undecodable with what is stored", items[1].Undecodable, items[1].phase(), items[1].raw != nil)
	}

	lists = 0
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: v1.GroupVersion.Group, Resource: "modelservings"}, "", errors.New("no"))
	if _, _, err := listServings(context.Background(), listClient(forbidden, nil, &lists)); !apierrors.IsForbidden(err) || lists != 1 {
		t.Errorf("a refused list: %v after %d lists; want the Forbidden after one", err, lists)
	}
}
