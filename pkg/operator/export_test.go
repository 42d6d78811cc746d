package operator

import (
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the tests of package operator_test reach inside (compiled into the tests only).

// UnchangedApplies is unchangedApplies, for the envtest of its applies.
type UnchangedApplies = unchangedApplies

// NewUnchangedApplies is newUnchangedApplies.
func NewUnchangedApplies(c client.Client, cache client.Reader) *UnchangedApplies {
	return newUnchangedApplies(c, cache)
}

// ForgetDeleted is forgetDeleted.
func (c *unchangedApplies) ForgetDeleted() toolscache.ResourceEventHandler { return c.forgetDeleted() }

// Remembers reports whether an apply sent for the StatefulSet is remembered.
func (c *unchangedApplies) Remembers(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.last[key]
	return ok
}

// Skipped is the count of SkippedAppliesMetric (the process's, every unchangedApplies').
func (c *unchangedApplies) Skipped() float64 { return testutil.ToFloat64(c.skipped) }
