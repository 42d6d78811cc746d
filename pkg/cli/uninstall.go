package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/config"
)

// UninstallOptions remove everything install applied, in the order that strands nothing.
type UninstallOptions struct {
	*RootOptions
	Timeout time.Duration
	// Yes skips the question (scripts must pass it: without a terminal there is no one to ask).
	Yes bool

	client client.WithWatch
}

func newUninstallCommand(root *RootOptions) *cobra.Command {
	o := &UninstallOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete every serving, then the operator, then the CRDs",
		Long: `Remove kubectl llm from the cluster in the order that strands nothing:

  1. delete every ModelServing, in every namespace;
  2. wait until they are gone: the operator removes their finalizer once their groups are gone;
  3. delete the operator (Deployment, RBAC, namespace kubectl-llm-system);
  4. delete the ModelServing CRD, and the LeaderWorkerSet CRD only if kubectl llm installed it
     and no LeaderWorkerSet that kubectl llm did not make still uses it.

It first says on stderr what it will delete and asks; --yes skips the question, and without a
terminal to ask on (a script, a pipeline) --yes is required.

If a serving keeps its finalizer past --timeout (the operator is not running, say), uninstall stops
before step 3 and says which servings are stuck: removing the operator or the CRD then would leave
them, and their children, behind.`,
		Example: "  kubectl llm uninstall\n  kubectl llm uninstall --yes --timeout 10m",
		Args:    cobra.NoArgs,
		RunE:    runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long to wait for the servings to be deleted")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask before deleting (required without a terminal)")
	return cmd
}

// Complete resolves the client.
func (o *UninstallOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.client, _, err = o.clientAndNamespace()
	return err
}

// Validate checks --timeout.
func (o *UninstallOptions) Validate() error {
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be a positive duration such as 5m, not %s", o.Timeout)
	}
	return nil
}

// Run deletes in order and stops when the servings do not go.
func (o *UninstallOptions) Run(ctx context.Context) error {
	host := o.host()
	servings, err := o.listServings(ctx, host)
	if err != nil {
		return err
	}
	if err := o.confirm(servings); err != nil {
		return err
	}
	if err := o.deleteServings(ctx, host, servings); err != nil {
		return err
	}
	objs, err := config.Manifests("embedded") // a superset of the default manifests
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for i := len(objs) - 1; i >= 0; i-- {
		u := objs[i]
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
			continue
		}
		if err := o.delete(ctx, u, host); err != nil {
			return err
		}
	}
	for _, u := range crds {
		if u.GetName() == lwsCRDName {
			live := u.DeepCopy()
			if err := o.client.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("read %s: %w", resourceName(u), explain(err, host))
			}
			if !installedByUs(live) {
				fmt.Fprintf(o.Streams.Out, "%s kept (not installed by kubectl llm)\n", resourceName(u))
				continue
			}
			foreign, err := o.foreignLeaderWorkerSets(ctx, host)
			if err != nil {
				return err
			}
			if len(foreign) > 0 {
				fmt.Fprintf(o.Streams.Out, "%s kept (%d LeaderWorkerSet(s) that kubectl llm did not make use it: %s)\n",
					resourceName(u), len(foreign), listSome(foreign, 5))
				continue
			}
		}
		if err := o.delete(ctx, u, host); err != nil {
			return err
		}
		if err := o.waitGone(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until a deleted CRD is gone: the API server first removes its objects.
func (o *UninstallOptions) waitGone(ctx context.Context, u *unstructured.Unstructured) error {
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err := waitForObject(waitCtx, o.client, u, func(live *unstructured.Unstructured) bool { return live == nil })
	if err != nil {
		return timedOut(err, fmt.Errorf("%s is still being deleted after %s: %w", resourceName(u), o.Timeout, err))
	}
	return nil
}

func (o *UninstallOptions) delete(ctx context.Context, u *unstructured.Unstructured, host string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	obj.SetName(u.GetName())
	obj.SetNamespace(u.GetNamespace())
	err := o.client.Delete(ctx, obj, client.PropagationPolicy("Background"))
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s: %w", resourceName(u), explain(err, host))
	}
	_, err = fmt.Fprintf(o.Streams.Out, "%s deleted\n", resourceName(u))
	return err
}

// listServings lists every serving in the cluster (none when the CRD is gone).
func (o *UninstallOptions) listServings(ctx context.Context, host string) ([]v1.ModelServing, error) {
	var list v1.ModelServingList
	if err := o.client.List(ctx, &list); err != nil {
		if explain(err, host) == errCRDMissing {
			return nil, nil // nothing to delete
		}
		return nil, fmt.Errorf("list servings: %w", explain(err, host))
	}
	return list.Items, nil
}

// confirm says what uninstall will delete and asks on the terminal, unless --yes.
func (o *UninstallOptions) confirm(servings []v1.ModelServing) error {
	if o.Yes {
		return nil
	}
	fmt.Fprint(o.Streams.ErrOut, uninstallPlan(servings))
	if !isTerminal(o.Streams.In) {
		return errors.New("uninstall deletes all of the above: pass --yes to confirm (there is no terminal to ask on)")
	}
	fmt.Fprint(o.Streams.ErrOut, "Delete all of this? [y/N] ")
	line, _ := bufio.NewReader(o.Streams.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("uninstall cancelled: nothing was deleted")
}

// uninstallPlan is what uninstall deletes, as the lines it shows before asking.
func uninstallPlan(servings []v1.ModelServing) string {
	var b strings.Builder
	b.WriteString("kubectl llm uninstall will delete:\n")
	if len(servings) == 0 {
		b.WriteString("  - no ModelServing (there are none)\n")
	} else {
		names := make([]string, len(servings))
		for i, ms := range servings {
			names[i] = ms.Namespace + "/" + ms.Name
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "  - %d ModelServing(s), with their groups and pods: %s\n", len(servings), listSome(names, 10))
	}
	b.WriteString("  - the operator: its Deployment, ServiceAccount, roles and bindings, Services, webhook configurations and the namespace kubectl-llm-system\n")
	b.WriteString("  - the ModelServing CRD\n")
	b.WriteString("  - the LeaderWorkerSet CRD, only if kubectl llm installed it and no other LeaderWorkerSet uses it\n")
	return b.String()
}

// listSome joins the first n names and says how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// foreignLeaderWorkerSets are the LeaderWorkerSets that no ModelServing controls (and that are not
// being deleted): someone else's, which need the LeaderWorkerSet CRD to stay.
func (o *UninstallOptions) foreignLeaderWorkerSets(ctx context.Context, host string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
	list.SetKind("LeaderWorkerSetList")
	if err := o.client.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list LeaderWorkerSets: %w", explain(err, host))
	}
	var out []string
	for _, lws := range list.Items {
		if lws.GetDeletionTimestamp() != nil {
			continue
		}
		ref := metav1.GetControllerOf(&lws)
		if ref != nil && ref.Kind == "ModelServing" && strings.HasPrefix(ref.APIVersion, v1.GroupVersion.Group+"/") {
			continue
		}
		out = append(out, lws.GetNamespace()+"/"+lws.GetName())
	}
	sort.Strings(out)
	return out, nil
}

// deleteServings deletes the servings and waits, by watching, until they are all gone.
func (o *UninstallOptions) deleteServings(ctx context.Context, host string, servings []v1.ModelServing) error {
	remaining := map[string]bool{}
	for i := range servings {
		ms := &servings[i]
		if err := o.client.Delete(ctx, ms); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete serving %s/%s: %w", ms.Namespace, ms.Name, explain(err, host))
		}
		remaining[ms.Namespace+"/"+ms.Name] = true
		fmt.Fprintf(o.Streams.Out, "%s deleted (namespace %s)\n", qualified(ms.Name), ms.Namespace)
	}
	if len(remaining) == 0 {
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	stuck := map[string]*v1.ModelServing{}
	onList := func(items []servingItem) (bool, error) {
		clear(stuck)
		for i := range items {
			stuck[items[i].Namespace+"/"+items[i].Name] = &items[i].ModelServing
		}
		return len(stuck) == 0, nil
	}
	onEvent := func(t watch.EventType, it servingItem) (bool, error) {
		key := it.Namespace + "/" + it.Name
		if t == watch.Deleted {
			delete(stuck, key)
		} else {
			stuck[key] = &it.ModelServing
		}
		return len(stuck) == 0, nil
	}
	err := watchServings(waitCtx, o.client, "", "", onList, onEvent)
	if len(stuck) == 0 {
		return nil
	}
	if waitCtx.Err() == nil && ctx.Err() == nil && err != nil {
		return explain(err, host)
	}
	var names []string
	for key, ms := range stuck {
		names = append(names, key+" (finalizers "+strings.Join(ms.Finalizers, ", ")+")")
	}
	sort.Strings(names)
	return &exitError{code: ExitTimedOut, err: fmt.Errorf("%d serving(s) still exist after %s: %s. The operator removes the finalizer %s once a serving's groups are gone: "+
		"is it running (kubectl -n kubectl-llm-system get deployment kubectl-llm-operator)? Not removing the operator or the CRDs, which would strand them",
		len(stuck), o.Timeout, strings.Join(names, "; "), v1.FinalizerChildren)}
}
