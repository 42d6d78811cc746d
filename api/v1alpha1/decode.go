package v1alpha1

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecodeServing decodes one ModelServing of an unstructured list or watch on its own, the way the
// typed client would, so that a stored object that does not fit the Go type (a value accepted by
// an older schema) is one bad item rather than an error for the whole list. On error the serving
// holds only the object's metadata, and undecodable is true; a serving that decodes but whose
// spec.template does not is returned whole with that error.
func DecodeServing(u *unstructured.Unstructured) (ms *ModelServing, undecodable bool, err error) {
	ms = &ModelServing{}
	raw, err := json.Marshal(u.Object)
	if err == nil {
		err = json.Unmarshal(raw, ms)
	}
	if err != nil {
		ms = &ModelServing{}
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(md, &ms.ObjectMeta) // validated by the API server
		}
		ms.SetGroupVersionKind(GroupVersion.WithKind("ModelServing"))
		return ms, true, fmt.Errorf("modelserving %s/%s cannot be read: %w (fix the object with kubectl edit, or delete it)", u.GetNamespace(), u.GetName(), err)
	}
	return ms, false, CheckServing(ms)
}

// CheckServing says what is wrong with a decoded serving that the API server could not see: a
// spec.template that does not decode. Nil when nothing is.
func CheckServing(ms *ModelServing) error {
	if _, err := DecodeTemplate(ms.Spec.Template); err != nil {
		return fmt.Errorf("modelserving %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	return nil
}
