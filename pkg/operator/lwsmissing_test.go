package operator

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLWSMissing: the errors the API server and the REST mapper give while the LeaderWorkerSet
// CRD is gone or going are told apart from an ordinary missing object and other failures.
func TestLWSMissing(t *testing.T) {
	gr := schema.GroupResource{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets"}
	notServed := apierrors.NewGenericServerResponse(404, "patch", gr, "oa", "", 0, false)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"no such kind", fmt.Errorf("apply: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gr.Group, Kind: "LeaderWorkerSet"}}), true},
		{"no such resource", fmt.Errorf("apply LeaderWorkerSet ns/oa: %w", notServed), true},
		{"the CRD terminating", apierrors.NewForbidden(gr, "oa", errors.New("create not allowed while custom resource definition is terminating")), true},
		{"an object that does not exist", apierrors.NewNotFound(gr, "oa"), false},
		{"forbidden by RBAC", apierrors.NewForbidden(gr, "oa", errors.New("RBAC")), false},
	} {
		if got := lwsMissing(tc.err); got != tc.want {
			t.Errorf("%s (%v): lwsMissing %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
