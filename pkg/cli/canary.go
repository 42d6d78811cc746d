package cli

import (
	"context"
	"fmt"
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
type CanaryOptions struct {
	*RootOptions
	servingTarget
	Image  string
	Model  string
	Groups int32
	servingOutput

	set func(string) bool
}

func newCanaryCommand(root *RootOptions) *cobra.Command {
	o := &CanaryOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "canary NAME (--image IMAGE | --model MODEL) --groups K",
		Short: "Move the K highest groups to a new image or model; promote or abort later",
		Long: `Start a staged canary: set the new image and/or model and spec.rollout.partition to replicas-K, so
only the K highest groups (index >= partition) move to the new revision; the others stay on the
current one. Watch it with kubectl llm rollout status NAME (done when the canary groups are ready),
then kubectl llm canary promote NAME moves the rest, or kubectl llm canary abort NAME goes back.`,
		Example: `  kubectl llm canary qwen --image vllm/vllm-openai:v0.11.1 --groups 1
  kubectl llm canary promote qwen
  kubectl llm canary abort qwen`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().StringVar(&o.Image, "image", "", "The engine image the canary groups get")
	cmd.Flags().StringVar(&o.Model, "model", "", "The model the canary groups serve")
	cmd.Flags().Int32Var(&o.Groups, "groups", 0, "How many groups (the highest indices) move first (required)")
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
	if !o.set("groups") {
		return fmt.Errorf("--groups is required: how many of the highest groups move first, e.g. --groups 1")
	}
	if o.Groups < 1 {
		return fmt.Errorf("--groups must be 1 or more, not %d", o.Groups)
	}
	return o.validateOutput()
}

// Run sets the image/model and the partition in one patch, from the replicas it read.
func (o *CanaryOptions) Run(ctx context.Context) error {
	var partition, replicas int32
	ms, err := patchServing(ctx, o.client, o.namespace, o.Name, o.host(), func(ms *v1.ModelServing) error {
		replicas = ptr.Deref(ms.Spec.Replicas, 1)
		if o.Groups > replicas {
			return fmt.Errorf("--groups %d is more than the %d group(s) of serving %q", o.Groups, replicas, o.Name)
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
		partition = replicas - o.Groups
		ms.Spec.Rollout.Partition = ptr.To(partition)
		return nil
	})
	if err != nil {
		return err
	}
	return o.printChanged(o.Streams.Out, ms, "%s canary started: groups %d and above (%d of %d) move to %s\n"+
		"  watch: kubectl llm rollout status %s; then kubectl llm canary promote %s, or kubectl llm canary abort %s\n",
		qualified(o.Name), partition, o.Groups, replicas, o.change(), o.Name, o.Name, o.Name)
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
		Long:              "Set spec.rollout.partition to 0: the remaining groups roll to the canary's revision under the rollout rules.",
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
rollout completed) back into the serving and set the partition to 0: the canary groups roll back.`,
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
		partition := ptr.Deref(ms.Spec.Rollout.Partition, 0)
		if o.Promote {
			if partition == 0 {
				return fmt.Errorf("serving %q has no canary to promote: spec.rollout.partition is already 0", o.Name)
			}
		} else {
			if now, err := revision.SpecOf(ms.Spec); partition == 0 && err == nil && revision.Same(now, *current) {
				return fmt.Errorf("serving %q has no canary to abort: the spec is the current revision %s and the partition is 0", o.Name, currentName)
			}
			if err := current.Into(&ms.Spec); err != nil {
				return err
			}
		}
		ms.Spec.Rollout.Partition = ptr.To[int32](0)
		return nil
	})
	if err != nil {
		return err
	}
	if o.Promote {
		return o.printChanged(o.Streams.Out, ms, "%s canary promoted: every group moves to the new revision\n", qualified(o.Name))
	}
	return o.printChanged(o.Streams.Out, ms, "%s canary aborted: every group returns to revision %s\n", qualified(o.Name), currentName)
}
