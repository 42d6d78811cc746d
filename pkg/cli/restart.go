package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// RestartOptions restart every group (a new spec.restart.id), every group of one role (a new
// spec.roles[].restart.id) or one group (delete its leader).
type RestartOptions struct {
	*RootOptions
	servingTarget
	Group int32
	// Role names the role to restart, or whose group --group is, for a serving with roles.
	Role string
	servingOutput

	set func(string) bool
}

func newRestartCommand(root *RootOptions) *cobra.Command {
	o := &RestartOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "restart NAME [--role R] [--group I]",
		Short: "Restart every group, a role's groups (through the rollout rules) or one group",
		Long: `Without --group: set a new spec.restart.id (the current time). The operator stamps it on the pod
template, so every group is recreated through the normal rollout rules (maxSurge, maxUnavailable),
never all at once. With roles, every role restarts in lockstep, as in a rollout.

With --role R (a serving with roles): set a new spec.roles[].restart.id of that role. Its groups are
recreated through the role's rollout rules; the other role's groups stay as they are.

With --group I: delete the leader pod of group I. LeaderWorkerSet then recreates the whole group
(a broken rank breaks the collective), leaving the other groups alone. A serving with roles numbers
each role's groups on its own: give the role with --role.`,
		Example:           "  kubectl llm restart qwen\n  kubectl llm restart qwen --group 1\n  kubectl llm restart qwen-pd --role decode\n  kubectl llm restart qwen-pd --role decode --group 3",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().Int32Var(&o.Group, "group", 0, "Restart only this group (its index)")
	cmd.Flags().StringVar(&o.Role, "role", "", "Restart only this role's groups (prefill or decode), or with --group the role the group is of, for a serving with roles")
	_ = cmd.RegisterFlagCompletionFunc("role", completeRoleNames)
	o.addOutputFlag(cmd)
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *RestartOptions) Complete(cmd *cobra.Command, args []string) error {
	o.set = cmd.Flags().Changed
	return o.complete(o.RootOptions, args)
}

// Validate checks --group and --role.
func (o *RestartOptions) Validate() error {
	if err := o.validateOneName("kubectl llm restart NAME [--role R] [--group I]"); err != nil {
		return err
	}
	if o.set("group") && o.Group < 0 {
		return fmt.Errorf("--group must be a group index of 0 or more, not %d", o.Group)
	}
	if o.set("role") {
		if err := validateRoleFlag(o.Role); err != nil {
			return err
		}
	}
	return o.validateOutput()
}

// Run restarts.
func (o *RestartOptions) Run(ctx context.Context) error {
	if o.set("group") {
		return o.restartGroup(ctx)
	}
	if o.set("role") {
		return o.restartRole(ctx)
	}
	id := o.Clock.Now().UTC().Format(time.RFC3339)
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		if ms.Spec.Restart != nil && ms.Spec.Restart.ID == id {
			id = o.Clock.Now().UTC().Format(time.RFC3339Nano) // a second restart within the same second
		}
		ms.Spec.Restart = &v1.RestartSpec{ID: id}
		return nil
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s restarting (restart id %s): groups are recreated under the rollout rules\n", qualified(o.Name), id)
}

// restartRole sets a new spec.roles[].restart.id of the role.
func (o *RestartOptions) restartRole(ctx context.Context) error {
	id := o.Clock.Now().UTC().Format(time.RFC3339)
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		if err := checkRoleFlag(ms, o.Role, true, "restart", ""); err != nil {
			return err
		}
		r := ms.Spec.Role(v1.RoleName(o.Role))
		if r.Restart != nil && r.Restart.ID == id {
			id = o.Clock.Now().UTC().Format(time.RFC3339Nano) // a second restart within the same second
		}
		r.Restart = &v1.RoleRestartSpec{ID: id}
		return nil
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s role %s restarting (restart id %s): its groups are recreated under its rollout rules, the other role's stay\n",
		qualified(o.Name), o.Role, id)
}

func (o *RestartOptions) restartGroup(ctx context.Context) error {
	host := o.host()
	ms, err := getServing(ctx, o.client, o.namespace, o.Name, host)
	if err != nil {
		return err
	}
	if err := checkRoleFlag(ms, o.Role, o.set("role"), "restart", "--group"); err != nil {
		return err
	}
	replicas, of := ptr.Deref(ms.Spec.Replicas, 1), ""
	if r := ms.Spec.Role(v1.RoleName(o.Role)); r != nil {
		replicas, of = ptr.Deref(r.Replicas, 1), " role "+o.Role
	}
	if o.Group >= replicas {
		return fmt.Errorf("--group %d does not exist: serving %q%s has groups 0 to %d", o.Group, o.Name, of, replicas-1)
	}
	sel := client.MatchingLabels{v1.LabelName: o.Name, lwsv1.GroupIndexLabelKey: strconv.Itoa(int(o.Group)), lwsv1.WorkerIndexLabelKey: "0"}
	if o.Role != "" {
		sel[naming.LabelRole] = o.Role
	}
	var pods corev1.PodList
	if err := o.client.List(ctx, &pods, client.InNamespace(o.namespace), sel); err != nil {
		return explain(err, host)
	}
	var leader *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			leader = &pods.Items[i]
		}
	}
	if leader == nil {
		return fmt.Errorf("group %d of serving %q has no running leader pod to delete (is it already being recreated? kubectl llm describe %s)", o.Group, o.Name, o.Name)
	}
	if err := o.client.Delete(ctx, leader, client.Preconditions{UID: &leader.UID}); err != nil && !apierrors.IsNotFound(err) {
		return explain(err, host)
	}
	return o.printChanged(o.Streams.Out, ms, "%s%s group %d restarting: deleted leader pod %s; the group is recreated\n", qualified(o.Name), of, o.Group, leader.Name)
}
