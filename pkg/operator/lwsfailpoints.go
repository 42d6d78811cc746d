package operator

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
)

// lwsClient is the client the embedded LWS controllers write through. The upstream code is a
// library we do not edit, so its kill points are at its writes: with a failpoint set, every write
// of theirs that went through and changed something is followed by
//
//	Failpoints.Hit("lws-after-<verb>-<object>", "<namespace>/<serving>")
//
// verb is create, update or delete (an apply that made the object is a create, one that changed it
// an update, one that changed nothing neither); object is leader-statefulset (the StatefulSet named
// after the LeaderWorkerSet), worker-statefulset (a group's, named after its leader pod), or the
// kind in lower case (leaderworkerset, controllerrevision, service, pod), with -status for a write
// of the status subresource. The serving is the one the object belongs to, from its LWS name label
// (a LeaderWorkerSet's own name). Without a failpoint there is no failpoint client: no cost.
//
// Before it, unchangedApplies keeps them from applying a StatefulSet that is as the same apply
// left it, reading it from cache; outermost, oneRevisionPerTemplate keeps them from recording one
// template twice. The second result is the unchangedApplies, whose forgetDeleted the caller hangs
// on the StatefulSets' informer.
func lwsClient(c client.Client, cache, live client.Reader, fp failpoint.Set) (client.Client, *unchangedApplies) {
	if fp.Active() {
		c = &failpointClient{Client: c, live: live, fp: fp}
	}
	applies := newUnchangedApplies(c, cache)
	return oneRevisionPerTemplate{Client: applies}, applies
}

type failpointClient struct {
	client.Client
	// live reads whether an object an apply names existed before (the apply carries no
	// resourceVersion to compare with).
	live client.Reader
	fp   failpoint.Set
}

func (c *failpointClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	c.hit("create", "", obj)
	return nil
}

func (c *failpointClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	c.hit("delete", "", obj)
	return nil
}

func (c *failpointClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.changed(ctx, obj, "", func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c *failpointClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.changed(ctx, obj, "", func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c *failpointClient) Status() client.SubResourceWriter {
	return failpointStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type failpointStatus struct {
	client.SubResourceWriter
	c *failpointClient
}

func (s failpointStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.c.changed(ctx, obj, "-status", func() error { return s.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (s failpointStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.changed(ctx, obj, "-status", func() error { return s.SubResourceWriter.Patch(ctx, obj, patch, opts...) })
}

// changed runs an update or patch of obj and hits the failpoint when it changed the object (its
// resourceVersion moved) or made it (an apply of an object that did not exist).
func (c *failpointClient) changed(ctx context.Context, obj client.Object, suffix string, write func() error) error {
	before, existed := obj.GetResourceVersion(), true
	if before == "" && suffix == "" { // an apply: ask the API server what was there
		was, err := c.emptyOf(obj)
		if err == nil {
			err = c.live.Get(ctx, client.ObjectKeyFromObject(obj), was)
			existed, before = err == nil, was.GetResourceVersion()
		}
		if err != nil && !apierrors.IsNotFound(err) {
			existed = true // unknown: an update if the version moves
		}
	}
	if err := write(); err != nil {
		return err
	}
	switch {
	case !existed:
		c.hit("create", suffix, obj)
	case obj.GetResourceVersion() != before:
		c.hit("update", suffix, obj)
	}
	return nil
}

// emptyOf is an empty object of obj's kind to read into.
func (c *failpointClient) emptyOf(obj client.Object) (client.Object, error) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (c *failpointClient) hit(verb, suffix string, obj client.Object) {
	point, key := lwsPoint(verb, suffix, obj, c.Scheme())
	if point != "" {
		c.fp.Hit(point, key)
	}
}

// lwsPoint names the failpoint of a write of obj and the serving it belongs to ("" for an
// object that belongs to no LeaderWorkerSet).
func lwsPoint(verb, suffix string, obj client.Object, scheme *runtime.Scheme) (point, key string) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return "", ""
	}
	set := obj.GetLabels()[lwsv1.SetNameLabelKey]
	if gvk.Group == lwsv1.GroupVersion.Group && gvk.Kind == "LeaderWorkerSet" {
		set = obj.GetName()
	}
	if set == "" {
		return "", ""
	}
	object := strings.ToLower(gvk.Kind)
	if gvk.Group == "apps" && gvk.Kind == "StatefulSet" {
		object = "worker-statefulset"
		if obj.GetName() == set {
			object = "leader-statefulset"
		}
	}
	return "lws-after-" + verb + "-" + object + suffix, obj.GetNamespace() + "/" + servingOfChild(set)
}
