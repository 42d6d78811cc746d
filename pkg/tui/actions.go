package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
)

// Actions are the writes the live view can make. They are the same writes as the CLI commands
// (`restart`, `restart --group`, `rollout pause/resume`, `canary promote/abort`); the CLI may
// pass its own implementation.
type Actions interface {
	// RestartGroup recreates group `group` by deleting its leader pod (LWS recreates the group).
	RestartGroup(ctx context.Context, namespace, name string, group int) error
	// Restart restarts every group through the rollout rules with a new spec.restart.id.
	Restart(ctx context.Context, namespace, name string) error
	// SetPaused pauses or resumes the rollout (spec.rollout.paused).
	SetPaused(ctx context.Context, namespace, name string, paused bool) error
	// Promote moves every group to the update revision (spec.rollout.partition 0).
	Promote(ctx context.Context, namespace, name string) error
	// Abort writes the current revision's spec back and sets partition 0.
	Abort(ctx context.Context, namespace, name string) error
}

// ClientActions implements Actions with a controller-runtime client and merge patches.
type ClientActions struct {
	Client client.Client
	// Clock stamps restart ids; nil means time.Now.
	Clock func() time.Time
}

var _ Actions = ClientActions{}

func (a ClientActions) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

// RestartGroup deletes the leader pod of one group.
func (a ClientActions) RestartGroup(ctx context.Context, ns, name string, group int) error {
	var pods corev1.PodList
	if err := a.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{
		v1.LabelName: name, lwsv1.GroupIndexLabelKey: strconv.Itoa(group), lwsv1.WorkerIndexLabelKey: "0",
	}); err != nil {
		return fmt.Errorf("list the leader pod of group %d of serving %s: %w", group, name, err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("group %d of serving %s has no leader pod to delete: it is being created already", group, name)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if err := a.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete leader pod %s of group %d: %w", pod.Name, group, err)
		}
	}
	return nil
}

// Restart sets spec.restart.id to the current time.
func (a ClientActions) Restart(ctx context.Context, ns, name string) error {
	var ms v1.ModelServing
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ms); err != nil {
		return fmt.Errorf("get serving %s: %w", name, err)
	}
	id := a.now().UTC().Format(time.RFC3339)
	if ms.Spec.Restart != nil && ms.Spec.Restart.ID == id {
		id += "-1" // two restarts in one second must still differ
	}
	return a.patchSpec(ctx, ns, name, map[string]any{"restart": map[string]any{"id": id}}, "restart")
}

// SetPaused sets spec.rollout.paused.
func (a ClientActions) SetPaused(ctx context.Context, ns, name string, paused bool) error {
	what := "resume"
	if paused {
		what = "pause"
	}
	return a.patchSpec(ctx, ns, name, map[string]any{"rollout": map[string]any{"paused": paused}}, what)
}

// Promote sets spec.rollout.partition to 0.
func (a ClientActions) Promote(ctx context.Context, ns, name string) error {
	return a.patchSpec(ctx, ns, name, map[string]any{"rollout": map[string]any{"partition": 0}}, "promote")
}

// Abort writes the spec of status.currentRevision back and sets partition 0, with an optimistic
// lock: a spec changed meanwhile is not overwritten.
func (a ClientActions) Abort(ctx context.Context, ns, name string) error {
	var ms v1.ModelServing
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ms); err != nil {
		return fmt.Errorf("get serving %s: %w", name, err)
	}
	cur := ms.Status.CurrentRevision
	if cur == "" {
		return fmt.Errorf("serving %s has no current revision to go back to yet", name)
	}
	var cr appsv1.ControllerRevision
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: cur}, &cr); err != nil {
		return fmt.Errorf("get revision %s of serving %s: %w", cur, name, err)
	}
	rev, err := operator.DecodeRevision(&cr)
	if err != nil {
		return err
	}
	next := ms.DeepCopy()
	rev.Into(&next.Spec)
	zero := int32(0)
	next.Spec.Rollout.Partition = &zero
	if err := a.Client.Patch(ctx, next, client.MergeFromWithOptions(&ms, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("abort: write revision %s back to serving %s: %w", cur, name, err)
	}
	return nil
}

func (a ClientActions) patchSpec(ctx context.Context, ns, name string, spec map[string]any, what string) error {
	raw, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	ms := &v1.ModelServing{}
	ms.Namespace, ms.Name = ns, name
	if err := a.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return fmt.Errorf("%s serving %s: %w", what, name, err)
	}
	return nil
}
