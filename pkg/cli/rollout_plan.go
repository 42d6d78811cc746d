package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// RolloutPlanOptions print the steps the rollout planner will take for a serving's pending change.
type RolloutPlanOptions struct {
	*RootOptions
	servingTarget
}

func newRolloutPlanCommand(root *RootOptions) *cobra.Command {
	o := &RolloutPlanOptions{RootOptions: root}
	return &cobra.Command{
		Use:   "plan NAME",
		Short: "Print the steps a rollout will take, before anything moves",
		Long: `Print the steps the rollout planner (the same one the operator runs) will take to move the
serving's groups to the revision its spec asks for: at each step, how many groups of each role are
on the new revision and how many exist (the surge above the desired groups). Every step waits until
every role has the previous step's new groups ready.

The plan starts from the groups that exist now and assumes every new group becomes ready; a held
canary (partition) or a pause ends it. A serving without roles is planned as one role, in batches
of maxSurge + maxUnavailable groups.`,
		Example:           "  kubectl llm rollout plan qwen-pd\n  kubectl llm set image qwen-pd vllm/vllm-openai:v0.12.0 && kubectl llm rollout plan qwen-pd",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
}

// Complete reads NAME and resolves the client.
func (o *RolloutPlanOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks NAME.
func (o *RolloutPlanOptions) Validate() error {
	return o.validateOneName("kubectl llm rollout plan NAME")
}

// Run reads the serving, its revisions and pods, plans and prints.
func (o *RolloutPlanOptions) Run(ctx context.Context) error {
	host := o.host()
	ms, err := getServing(ctx, o.client, o.namespace, o.Name, host)
	if err != nil {
		return err
	}
	var revs appsv1.ControllerRevisionList
	if err := o.client.List(ctx, &revs, revision.ListOptions(ms.Namespace, ms.Name)...); err != nil {
		return fmt.Errorf("list revisions: %w", explain(err, host))
	}
	var pods corev1.PodList
	if err := o.client.List(ctx, &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{v1.LabelName: ms.Name}); err != nil {
		return fmt.Errorf("list pods: %w", explain(err, host))
	}
	target, label := planTarget(ms, revs.Items)
	// The operator's own input: the same groups counted the same way.
	in, err := status.PlanInput(observedOf(ctx, o.client, ms, pods.Items), target, o.Clock.Now())
	if err != nil {
		return fmt.Errorf("plan %s: %w", o.Name, err)
	}
	printPlan(o.Streams.Out, ms, label, in)
	return nil
}

// planTarget is the revision the spec asks for: the recorded revision with the spec's content,
// or "" when none is recorded yet (then no group runs it), with how to name it.
func planTarget(ms *v1.ModelServing, revs []appsv1.ControllerRevision) (name, label string) {
	isSpec := specMatcher(ms)
	for i := range revs {
		if isSpec(&revs[i]) {
			return revs[i].Name, "revision " + revs[i].Name
		}
	}
	return "", fmt.Sprintf("the spec of generation %d (not recorded as a revision yet)", ms.Generation)
}

// printPlan prints the steps of in, or why there are none.
func printPlan(w io.Writer, ms *v1.ModelServing, label string, in roleplan.Input) {
	pending := false
	for _, r := range in.Roles {
		pending = pending || r.Old > 0 || r.Updated < r.Desired
	}
	if !pending {
		fmt.Fprintf(w, "%s has no pending change: every group runs %s.\n", ms.Name, label)
		return
	}
	fmt.Fprintf(w, "Rollout plan of %s to %s\n", ms.Name, label)
	fmt.Fprintf(w, "Strategy: %s; %s\n", orDefault(string(in.Strategy), string(v1.RollingUpdate)), limitsLine(in.Roles))
	if in.Paused {
		fmt.Fprintf(w, "Paused: nothing moves until kubectl llm rollout resume %s; then:\n", ms.Name)
		in.Paused = false
	}
	steps := roleplan.Steps(in)
	if len(steps) > 0 && steps[0].Steps == 0 {
		fmt.Fprintf(w, "No rollout: no group runs another revision, so every group is created (or removed) at once: %s.\n", targetsLine(in.Roles, steps[0]))
		return
	}
	header := []string{"STEP"}
	for _, r := range in.Roles {
		header = append(header, strings.ToUpper(orDefault(string(r.Name), "groups"))+" NEW/EXIST")
	}
	header = append(header, "SURGE", "THEN")
	rows := [][]string{header}
	for _, p := range steps {
		if p.Steps == 0 { // the rollout's end: every group new and ready
			break
		}
		row := []string{fmt.Sprintf("%d/%d", p.Step, p.Steps)}
		surge := int32(0)
		for i, t := range p.Roles {
			row = append(row, fmt.Sprintf("%d/%d", t.Updated, t.Replicas))
			surge += max(t.Replicas-in.Roles[i].Desired, 0)
		}
		row = append(row, fmt.Sprint(surge), stepThen(p))
		rows = append(rows, row)
	}
	renderTable(w, rows, nil)
}

// stepThen is what follows a step: waiting for its new groups, or the hold that ends the plan.
func stepThen(p roleplan.Plan) string {
	switch p.State {
	case roleplan.CanaryHeld, roleplan.Paused:
		return p.Why
	}
	if p.Step == p.Steps {
		return "wait for every new group ready: done"
	}
	return "wait for the new groups ready"
}

func limitsLine(rs []roleplan.Role) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		s := fmt.Sprintf("%d groups, maxSurge %d, maxUnavailable %d", r.Desired, r.MaxSurge, r.MaxUnavailable)
		if r.Canary != nil && *r.Canary < r.Desired {
			s += fmt.Sprintf(", canary %d", *r.Canary)
		}
		if r.Name != "" {
			s = string(r.Name) + " " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func targetsLine(rs []roleplan.Role, p roleplan.Plan) string {
	parts := make([]string, 0, len(p.Roles))
	for i, t := range p.Roles {
		s := fmt.Sprintf("%d group(s)", t.Replicas)
		if rs[i].Name != "" {
			s = string(rs[i].Name) + " " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
