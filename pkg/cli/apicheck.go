package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdCheck says whether the API of the CRD called name (<plural>.<group>) is installed and which
// versions it serves. It is the one "is this API served" check of preflight, deploy, install,
// version and the operator. It reads the CRD (which also names the storage version); whoever may
// not read CRDs (the operator's ServiceAccount) is answered by API discovery instead.
func crdCheck(ctx context.Context, c client.Client, what, name string) check {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return check{Name: what, Result: "FAIL", Detail: name + " is not installed"}
	case apierrors.IsForbidden(err):
		return discoveryCheck(c, what, name, err)
	case err != nil:
		return check{Name: what, Result: "unknown", Detail: "cannot read the CRD " + name + ": " + explain(err, "").Error(), err: err}
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []string
	storage := ""
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		n, _ := m["name"].(string)
		if s, _ := m["served"].(bool); s {
			served = append(served, n)
		}
		if s, _ := m["storage"].(bool); s {
			storage = n
		}
	}
	return check{Name: what, Result: "ok", Detail: fmt.Sprintf("%s served (storage %s)", strings.Join(served, ", "), storage)}
}

// discoveryCheck answers crdCheck through API discovery (the client's REST mapper), which every
// authenticated user may read, when the CRD itself may not be read.
func discoveryCheck(c client.Client, what, name string, forbidden error) check {
	resource, group, ok := strings.Cut(name, ".")
	if !ok {
		return check{Name: what, Result: "unknown", Detail: "cannot read the CRD " + name + ": " + forbidden.Error(), err: forbidden}
	}
	kinds, err := c.RESTMapper().KindsFor(schema.GroupVersionResource{Group: group, Resource: resource})
	switch {
	case meta.IsNoMatchError(err) || (err == nil && len(kinds) == 0):
		return check{Name: what, Result: "FAIL", Detail: name + " is not installed"}
	case err != nil:
		return check{Name: what, Result: "unknown", Detail: "cannot discover " + name + ": " + explain(err, "").Error(), err: err}
	}
	var served []string
	for _, k := range kinds {
		if !slices.Contains(served, k.Version) {
			served = append(served, k.Version)
		}
	}
	return check{Name: what, Result: "ok", Detail: strings.Join(served, ", ") + " served"}
}
