package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// RolloutHistoryOptions list the recorded revisions of a serving.
type RolloutHistoryOptions struct {
	*RootOptions
	servingTarget
	Revision int64
	output   *outputFlags
}

func newRolloutHistoryCommand(root *RootOptions) *cobra.Command {
	o := &RolloutHistoryOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the recorded revisions of a serving",
		Long: `List the revisions the operator recorded for a serving, oldest first: number, name, which one
every group ran when the last rollout completed (current) and which one the spec asks for (update),
and what changed. --revision N prints what revision N recorded. -o yaml|json|name prints the
ControllerRevision objects instead (with --revision, that one).`,
		Example:           "  kubectl llm rollout history qwen\n  kubectl llm rollout history qwen --revision 2",
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "Print the spec recorded in this revision")
	o.output = newOutputFlags("")
	o.output.addFlags(cmd, "Print the ControllerRevisions: yaml, json or name")
	return cmd
}

// Complete reads NAME and resolves the client.
func (o *RolloutHistoryOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(o.RootOptions, args)
}

// Validate checks --revision.
func (o *RolloutHistoryOptions) Validate() error {
	if err := o.validateOneName("kubectl llm rollout history NAME"); err != nil {
		return err
	}
	if o.Revision < 0 {
		return fmt.Errorf("--revision must be a revision number of 1 or more, not %d", o.Revision)
	}
	return o.output.validate()
}

// Run prints the table, or one revision.
func (o *RolloutHistoryOptions) Run(ctx context.Context) error {
	ms, revs, err := servingRevisions(ctx, o.client, o.namespace, o.Name, o.host())
	if err != nil {
		return err
	}
	if o.Revision > 0 {
		cr, err := findRevision(revs, o.Revision, o.Name)
		if err != nil {
			return err
		}
		revs = []appsv1.ControllerRevision{*cr}
	}
	if !o.output.ownFormat() {
		objs := make([]runtime.Object, len(revs))
		for i := range revs {
			revs[i].SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ControllerRevision"))
			objs[i] = &revs[i]
		}
		return o.output.printObjects(o.Streams.Out, o.Revision > 0, objs)
	}
	if o.Revision > 0 {
		cr := &revs[0]
		rs, err := revision.Decode(cr)
		if err != nil {
			return err
		}
		raw, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Streams.Out, "serving %q revision %d (%s):\n", o.Name, cr.Revision, cr.Name)
		_, err = fmt.Fprintf(o.Streams.Out, "%s\n", raw)
		return err
	}
	fmt.Fprintf(o.Streams.Out, "serving %q\n", o.Name)
	if len(revs) == 0 {
		fmt.Fprintln(o.Streams.Out, "No revisions recorded yet (the operator records one per distinct pod-affecting spec).")
		return nil
	}
	// The operator's word, not a hash of the spec made here (another version may hash otherwise).
	update := ms.Status.UpdateRevision
	rows := [][]string{{"REVISION", "NAME", "STATUS", "CHANGE-CAUSE"}}
	for _, cr := range revs {
		var marks []string
		if cr.Name == ms.Status.CurrentRevision {
			marks = append(marks, "current")
		}
		if cr.Name == update {
			marks = append(marks, "update")
		}
		cause := "<unreadable>"
		if rs, err := revision.Decode(&cr); err == nil {
			cause = revision.ChangeCause(rs)
		}
		rows = append(rows, []string{fmt.Sprint(cr.Revision), cr.Name, orDash(strings.Join(marks, ",")), cause})
	}
	renderTable(o.Streams.Out, rows, nil)
	return nil
}

// servingRevisions reads a serving and its revisions, oldest first.
func servingRevisions(ctx context.Context, c client.Client, ns, name, host string) (*v1.ModelServing, []appsv1.ControllerRevision, error) {
	ms, err := getServing(ctx, c, ns, name, host)
	if err != nil {
		return nil, nil, err
	}
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, revision.ListOptions(ns, name)...); err != nil {
		return nil, nil, fmt.Errorf("list revisions: %w", explain(err, host))
	}
	revs := list.Items
	revision.Sort(revs)
	return ms, revs, nil
}

func findRevision(revs []appsv1.ControllerRevision, n int64, name string) (*appsv1.ControllerRevision, error) {
	var have []string
	for i := range revs {
		if revs[i].Revision == n {
			return &revs[i], nil
		}
		have = append(have, fmt.Sprint(revs[i].Revision))
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("revision %d of serving %q not found: no revisions are recorded", n, name)
	}
	return nil, fmt.Errorf("revision %d of serving %q not found: recorded revisions are %s", n, name, strings.Join(have, ", "))
}
