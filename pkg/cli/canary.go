package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// CanaryOptions start a canary: a new image or model on the K highest groups, through the partition.
// On a serving with roles, K groups of every role (or each role's share, --fraction), through each
// role's partition.
type CanaryOptions struct {
	*RootOptions
	servingTarget
	Image    string
	Model    string
	Groups   int32
	Fraction string // a percentage such as 25%
	servingOutput

	percent int32 // Fraction parsed
	set     func(string) bool
}

func newCanaryCommand(root *RootOptions) *cobra.Command {
	o := &CanaryOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "canary NAME (--image IMAGE | --model MODEL) (--groups K | --fraction P)",
		Short: "Move the K highest groups to a new image or model; promote or abort later",
		Long: `Start a staged canary: set the new image and/or model and spec.rollout.partition to replicas-K, so
only the K highest groups (index >= partition) move to the new revision; the others stay on the
current one. --fraction P instead moves ceil(P x replicas) groups, at least 1.

On a serving with roles (prefill and decode), the canary covers the whole topology: --groups K
moves K groups of every role (each role's spec.roles[].rollout.partition is its replicas-K), and
--fraction P moves each role's share, so the canary keeps the roles' ratio (25% of 2 prefill and
8 decode groups is 1 and 2). A canary never leaves a role without new groups: the new revision
could not serve.

Watch it with kubectl llm rollout status NAME (done when the canary groups are ready), then
kubectl llm canary promote NAME moves the rest, or kubectl llm canary abort NAME goes back.`,
		Example: `  kubectl llm canary qwen --image vllm/vllm-openai:v0.11.1 --groups 1
  kubectl llm canary pd --image vllm/vllm-openai:v0.11.1 --fraction 25%
  kubectl llm canary promote qwen
  kubectl llm canary abort qwen`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().StringVar(&o.Image, "image", "", "The engine image the canary groups get")
	cmd.Flags().StringVar(&o.Model, "model", "", "The model the canary groups serve")
	cmd.Flags().Int32Var(&o.Groups, "groups", 0, "How many groups (the highest indices) move first; with roles, of every role")
	cmd.Flags().StringVar(&o.Fraction, "fraction", "", "The share of groups (of each role) that moves first, e.g. 25%: ceil(P x replicas), at least 1")
	o.addOutputFlag(cmd)
	cmd.AddCommand(newCanaryPromoteCommand(root), newCanaryAbortCommand(root))
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *CanaryOptions) Complete(cmd *cobra.Command, args []string) error {
	o.set = cmd.Flags().Changed
	return o.complete(o.RootOptions, args)
}

// Validate checks that there is something to canary on some groups.
func (o *CanaryOptions) Validate() error {
	if err := o.validateOneName("kubectl llm canary NAME --image IMAGE --groups K"); err != nil {
		return err
	}
	if o.Image == "" && o.Model == "" {
		return fmt.Errorf("--image or --model is required: what the canary groups change to")
	}
	switch {
	case o.set("groups") && o.set("fraction"):
		return fmt.Errorf("--groups and --fraction cannot be combined: give how many groups move first (--groups 1) or which share (--fraction 25%%)")
	case o.set("fraction"):
		p, err := parsePercent(o.Fraction)
		if err != nil {
			return err
		}
		o.percent = p
	case !o.set("groups"):
		return fmt.Errorf("--groups or --fraction is required: how many of the highest groups move first, e.g. --groups 1 or --fraction 25%%")
	case o.Groups < 1:
		return fmt.Errorf("--groups must be 1 or more, not %d", o.Groups)
	}
	return o.validateOutput()
}

// parsePercent reads --fraction: a whole percentage from 1% to 100%.
func parsePercent(s string) (int32, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || !strings.HasSuffix(s, "%") || n < 1 || n > 100 {
		return 0, fmt.Errorf("--fraction must be a percentage from 1%% to 100%%, such as 25%%, not %q", s)
	}
	return int32(n), nil
}

// canaryGroups is how many of replicas groups move: --groups, or --fraction's share rounded up
// and at least 1. of names the groups in the refusal (serving "x", or role prefill of serving "x").
func (o *CanaryOptions) canaryGroups(replicas int32, of string) (int32, error) {
	if o.percent == 0 {
		if o.Groups > replicas {
			return 0, fmt.Errorf("--groups %d is more than the %d group(s) of %s", o.Groups, replicas, of)
		}
		return o.Groups, nil
	}
	if replicas == 0 {
		return 0, fmt.Errorf("--fraction %s has no group to move: %s has 0 groups; scale it up first", o.Fraction, of)
	}
	return max((o.percent*replicas+99)/100, 1), nil
}

// roleCanary is what the canary moves of one role ("" for a serving without roles).
type roleCanary struct {
	role                        v1.RoleName
	groups, replicas, partition int32
}

func (c roleCanary) String() string {
	what := "groups"
	if c.role != "" {
		what = string(c.role) + " groups"
	}
	return fmt.Sprintf("%s %d and above (%d of %d)", what, c.partition, c.groups, c.replicas)
}

// Run sets the image/model and the partition(s) in one patch, from the replicas it read.
func (o *CanaryOptions) Run(ctx context.Context) error {
	var moved []roleCanary
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		moved = nil
		if len(ms.Spec.Roles) == 0 {
			replicas := ptr.Deref(ms.Spec.Replicas, 1)
			k, err := o.canaryGroups(replicas, fmt.Sprintf("serving %q", o.Name))
			if err != nil {
				return err
			}
			moved = append(moved, roleCanary{groups: k, replicas: replicas, partition: replicas - k})
		}
		for _, name := range v1.RoleNames() {
			if r := ms.Spec.Role(name); r != nil {
				replicas := ptr.Deref(r.Replicas, 1)
				k, err := o.canaryGroups(replicas, fmt.Sprintf("role %s of serving %q (a canary moves that many groups of every role; --fraction P moves each role's share)", name, o.Name))
				if err != nil {
					return err
				}
				moved = append(moved, roleCanary{role: name, groups: k, replicas: replicas, partition: replicas - k})
			}
		}
		before, err := revision.SpecOf(ms.Spec)
		if err != nil {
			return fmt.Errorf("serving %q has a spec the operator cannot serve (%w): fix it before a canary", o.Name, err)
		}
		if o.Image != "" {
			ms.Spec.Engine.Image = o.Image
		}
		if o.Model != "" {
			ms.Spec.Model = o.Model
		}
		if after, err := revision.SpecOf(ms.Spec); err == nil && revision.Same(after, before) {
			return fmt.Errorf("serving %q already runs %s: nothing to canary", o.Name, o.change())
		}
		for _, c := range moved {
			if c.role == "" {
				ms.Spec.Rollout.Partition = ptr.To(c.partition)
				continue
			}
			r := ms.Spec.Role(c.role)
			if r.Rollout == nil {
				r.Rollout = &v1.RoleRolloutSpec{}
			}
			r.Rollout.Partition = ptr.To(c.partition)
		}
		return nil
	})
	if err != nil {
		return err
	}
	parts := make([]string, len(moved))
	for i, c := range moved {
		parts[i] = c.String()
	}
	return o.printChanged(o.Streams.Out, ms, "%s canary started: %s move to %s\n"+
		"  watch: kubectl llm rollout status %s; then kubectl llm canary promote %s, or kubectl llm canary abort %s\n",
		qualified(o.Name), strings.Join(parts, ", "), o.change(), o.Name, o.Name, o.Name)
}

func (o *CanaryOptions) change() string {
	var parts []string
	if o.Image != "" {
		parts = append(parts, "image "+o.Image)
	}
	if o.Model != "" {
		parts = append(parts, "model "+o.Model)
	}
	return strings.Join(parts, " and ")
}

// CanaryDecisionOptions promote or abort a canary.
type CanaryDecisionOptions struct {
	*RootOptions
	servingTarget
	Promote bool // false: abort
	servingOutput
}

func newCanaryPromoteCommand(root *RootOptions) *cobra.Command {
	o := &CanaryDecisionOptions{RootOptions: root, Promote: true}
	cmd := &cobra.Command{
		Use:               "promote NAME",
		Short:             "Move every group to the canary's revision (partition 0)",
		Long:              "Set spec.rollout.partition to 0 (with roles, clear every role's spec.roles[].rollout.partition): the remaining groups roll to the canary's revision under the rollout rules, every role in lockstep.",
		Example:           "  kubectl llm canary promote qwen",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	o.addOutputFlag(cmd)
	return cmd
}

func newCanaryAbortCommand(root *RootOptions) *cobra.Command {
	o := &CanaryDecisionOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "abort NAME",
		Short: "Return the canary groups to the current revision",
		Long: `Write the current revision's spec (status.currentRevision: what every group ran when the last
rollout completed) back into the serving and set the partition to 0: the canary groups roll back.
On a serving with roles, every role's pod fields go back to the current revision's and every
role's partition is cleared; each role keeps its replicas.`,
		Example:           "  kubectl llm canary abort qwen",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	o.addOutputFlag(cmd)
	return cmd
}

func (o *CanaryDecisionOptions) verb() string {
	if o.Promote {
		return "promote"
	}
	return "abort"
}

// Complete reads NAME and resolves the client.
func (o *CanaryDecisionOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks -o.
func (o *CanaryDecisionOptions) Validate() error {
	if err := o.validateOneName("kubectl llm canary " + o.verb() + " NAME"); err != nil {
		return err
	}
	return o.validateOutput()
}

// Run patches the partition (and, for abort, the spec) in one patch.
func (o *CanaryDecisionOptions) Run(ctx context.Context) error {
	host := o.host()
	var current *revision.Spec
	var currentName string
	if !o.Promote {
		ms, err := getServing(ctx, o.client, o.namespace, o.Name, host)
		if err != nil {
			return err
		}
		currentName = ms.Status.CurrentRevision
		if currentName == "" {
			return fmt.Errorf("serving %q has no current revision recorded yet: nothing to go back to (is the operator running?)", o.Name)
		}
		cr := &appsv1.ControllerRevision{}
		if err := o.client.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: currentName}, cr); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("the current revision %s of serving %q is not recorded any more: use kubectl llm rollout undo %s --to-revision N", currentName, o.Name, o.Name)
			}
			return explain(err, host)
		}
		rs, err := revision.Decode(cr)
		if err != nil {
			return err
		}
		current = &rs
	}
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, host, func(ms *v1.ModelServing) error {
		held, where := canaryPartitions(ms)
		if o.Promote {
			if !held {
				return fmt.Errorf("serving %q has no canary to promote: %s already 0", o.Name, where)
			}
		} else {
			if now, err := revision.SpecOf(ms.Spec); !held && err == nil && revision.Same(now, *current) {
				return fmt.Errorf("serving %q has no canary to abort: the spec is the current revision %s and %s 0", o.Name, currentName, where)
			}
			if err := current.Into(&ms.Spec); err != nil {
				return err
			}
		}
		clearPartitions(ms)
		return nil
	})
	if err != nil {
		return err
	}
	every := "every group"
	if len(ms.Spec.Roles) > 0 {
		every = "every group of every role"
	}
	if o.Promote {
		return o.printChanged(o.Streams.Out, ms, "%s canary promoted: %s moves to the new revision\n", qualified(o.Name), every)
	}
	return o.printChanged(o.Streams.Out, ms, "%s canary aborted: %s returns to revision %s\n", qualified(o.Name), every, currentName)
}

// canaryPartitions says whether a partition holds a canary: spec.rollout.partition, or on a
// serving with roles any role's; where names the field(s) for a message ("... is/are already 0").
func canaryPartitions(ms *v1.ModelServing) (held bool, where string) {
	if len(ms.Spec.Roles) == 0 {
		return ptr.Deref(ms.Spec.Rollout.Partition, 0) > 0, "spec.rollout.partition is"
	}
	for _, r := range ms.Spec.Roles {
		if r.Rollout != nil && ptr.Deref(r.Rollout.Partition, 0) > 0 {
			held = true
		}
	}
	return held, "every role's spec.roles[].rollout.partition is"
}

// clearPartitions ends a canary: spec.rollout.partition 0, or on a serving with roles every
// role's partition unset (and its rollout, when the partition was all it held).
func clearPartitions(ms *v1.ModelServing) {
	if len(ms.Spec.Roles) == 0 {
		ms.Spec.Rollout.Partition = ptr.To[int32](0)
		return
	}
	for i := range ms.Spec.Roles {
		r := &ms.Spec.Roles[i]
		if r.Rollout == nil {
			continue
		}
		r.Rollout.Partition = nil
		if *r.Rollout == (v1.RoleRolloutSpec{}) {
			r.Rollout = nil
		}
	}
}
