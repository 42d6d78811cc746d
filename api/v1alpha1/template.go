package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// DecodeTemplate decodes spec.template into a pod template: the one place that turns the raw
// overlay into typed data (the operator's pod templates and revisions, the CLI's views). It is
// strict: an unknown field (a typo such as nodeSelecter) or a duplicated one is an error, as is a
// value of the wrong type. The error names the field under spec.template and what to do. A nil
// or empty template is nil.
func DecodeTemplate(raw *runtime.RawExtension) (*corev1.PodTemplateSpec, error) {
	if raw == nil {
		return nil, nil
	}
	data := raw.Raw
	if data == nil && raw.Object != nil {
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			return nil, fmt.Errorf("spec.template: %w", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	var t corev1.PodTemplateSpec
	strict, err := sigsjson.UnmarshalStrict(data, &t, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, templateError(err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("spec.template: %s: spec.template is a core/v1 PodTemplateSpec (metadata, spec); fix or remove the field", strings.Join(msgs, "; "))
	}
	return &t, nil
}

// EncodeTemplate is the inverse of DecodeTemplate, for writing a recorded revision back into a spec.
func EncodeTemplate(t *corev1.PodTemplateSpec) (*runtime.RawExtension, error) {
	if t == nil {
		return nil, nil
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("spec.template: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// templateError names the field of a decoding error: encoding/json says
// "json: cannot unmarshal number into Go struct field PodSpec.spec.containers of type []v1.Container".
func templateError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "spec.template"
		if te.Field != "" {
			where += "." + te.Field
		}
		return fmt.Errorf("%s: must be %s, not a JSON %s: spec.template is a core/v1 PodTemplateSpec; fix the field or remove it", where, jsonKind(te.Type), te.Value)
	}
	return fmt.Errorf("spec.template: %w: spec.template is a core/v1 PodTemplateSpec; fix the field or remove it", err)
}

// jsonKind says which JSON value a Go type wants, in the words of the API docs.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 {
		return fmt.Sprintf("a whole number that fits %s", t.Kind())
	}
	return "a " + t.String()
}
